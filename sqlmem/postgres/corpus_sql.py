"""SQL of `corpus_stats`, shared by the fact and history stores: each agent's row and token
counts per corpus (BM25's N and mean length), and the row that orders an agent's writers.

Every writer of an agent's corpus takes its row first (`LOCK_CORPUS`): writers of one agent
queue there, as SQLite's queue at BEGIN IMMEDIATE, so the lengths they read next and the
counts they write last stay exact, and locks are always taken in one order (this row,
then the session's); other agents never wait.
"""

from __future__ import annotations

__all__ = ["FACTS", "LOCK_CORPUS", "MESSAGES", "STATS", "UPDATE_STATS"]

FACTS = 1
MESSAGES = 2

LOCK_CORPUS = """
INSERT INTO corpus_stats AS s (agent_id, corpus) VALUES (%s, %s)
ON CONFLICT (agent_id, corpus) DO UPDATE SET docs = s.docs
"""
UPDATE_STATS = """
UPDATE corpus_stats SET docs = docs + %s, tokens = tokens + %s
WHERE agent_id = %s AND corpus = %s
"""
STATS = "SELECT docs, tokens FROM corpus_stats WHERE agent_id = %s AND corpus = %s"
