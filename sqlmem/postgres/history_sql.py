"""SQL text of the PostgreSQL history store. Every statement names one agent_id (Citus: one
shard); values are always bound."""

from __future__ import annotations

from .corpus_sql import LOCK_CORPUS, MESSAGES, STATS, UPDATE_STATS
from .ranking import bm25_statement

__all__ = [
    "ARCHIVE",
    "COUNT",
    "DELETE_MESSAGES",
    "DELETE_SESSION",
    "FIRST_NON_TOOL_AT_OR_BEFORE",
    "INSERT",
    "LOCK_CORPUS",
    "MAX_SEQ",
    "MESSAGES",
    "MESSAGE_COLUMNS",
    "RESERVE_SEQS",
    "SEARCH",
    "SEARCH_SESSION",
    "SELECT_ALL",
    "SELECT_ALL_ACTIVE",
    "SELECT_BY_KEYS",
    "SELECT_RECENT",
    "SELECT_SESSION",
    "SELECT_SUMMARY",
    "SESSIONS",
    "SET_SUMMARY",
    "STATS",
    "UPDATE_STATS",
]

MAX_SEQ = 2**63 - 1

MESSAGE_COLUMNS = (
    "m.seq, m.role, m.content, m.name, m.tool_call_id, m.tool_calls, m.is_error, "
    "m.metadata, m.created_at"
)

# Takes `k` seqs for a batch of k messages in the insert's transaction: the upsert holds the
# session's row lock until commit, so seqs stay unique and gap-free across processes and
# machines. Past 2**63-1 the CASE gives NULL and the NOT NULL constraint refuses the append.
RESERVE_SEQS = f"""
INSERT INTO sessions AS s (agent_id, session_id, last_seq, created_at, updated_at)
VALUES (%(agent)s, %(session)s, %(count)s, %(now)s, %(now)s)
ON CONFLICT (agent_id, session_id) DO UPDATE
    SET last_seq = CASE WHEN s.last_seq <= {MAX_SEQ} - excluded.last_seq
                   THEN s.last_seq + excluded.last_seq END,
        updated_at = excluded.updated_at
RETURNING last_seq, archived_seq
"""

INSERT = """
INSERT INTO messages (agent_id, session_id, seq, role, content, name, tool_call_id,
                      tool_calls, is_error, metadata, created_at, doc_len, tsv)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector)
"""

SELECT_SESSION = """
SELECT last_seq, archived_seq FROM sessions
WHERE agent_id = %s AND session_id = %s FOR UPDATE
"""

_ARCHIVED = (
    "(SELECT archived_seq FROM sessions WHERE agent_id = %(agent)s AND session_id = %(session)s)"
)

SELECT_RECENT = f"""
SELECT {MESSAGE_COLUMNS} FROM messages AS m
WHERE m.agent_id = %(agent)s AND m.session_id = %(session)s AND m.seq > {_ARCHIVED}
ORDER BY m.seq DESC LIMIT %(limit)s
"""
SELECT_ALL_ACTIVE = f"""
SELECT {MESSAGE_COLUMNS} FROM messages AS m
WHERE m.agent_id = %(agent)s AND m.session_id = %(session)s AND m.seq > {_ARCHIVED}
ORDER BY m.seq
"""
SELECT_ALL = f"""
SELECT {MESSAGE_COLUMNS} FROM messages AS m
WHERE m.agent_id = %(agent)s AND m.session_id = %(session)s ORDER BY m.seq
"""

COUNT = "SELECT last_seq - archived_seq FROM sessions WHERE agent_id = %s AND session_id = %s"
SELECT_SUMMARY = "SELECT summary FROM sessions WHERE agent_id = %s AND session_id = %s"
SET_SUMMARY = """
INSERT INTO sessions AS s (agent_id, session_id, summary, created_at, updated_at)
VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (agent_id, session_id) DO UPDATE
    SET summary = excluded.summary, updated_at = excluded.updated_at
"""
SESSIONS = """
SELECT session_id FROM sessions WHERE agent_id = %s AND (last_seq > 0 OR summary != '')
"""

FIRST_NON_TOOL_AT_OR_BEFORE = """
SELECT seq FROM messages
WHERE agent_id = %s AND session_id = %s AND seq > %s AND seq <= %s AND role != 'tool'
ORDER BY seq DESC LIMIT 1
"""
ARCHIVE = """
UPDATE sessions SET archived_seq = greatest(archived_seq, %s), summary = coalesce(%s, summary),
                    updated_at = %s
WHERE agent_id = %s AND session_id = %s
"""

DELETE_MESSAGES = """
WITH gone AS (DELETE FROM messages WHERE agent_id = %s AND session_id = %s RETURNING doc_len)
SELECT count(*), coalesce(sum(doc_len), 0) FROM gone
"""
DELETE_SESSION = "DELETE FROM sessions WHERE agent_id = %s AND session_id = %s"

# Search: rows holding any query lexeme, every session (the statistics count them all),
# with the session filter as the "kept" column (sqlmem.postgres.ranking).
_CANDIDATES = """
SELECT m.session_id, m.seq, m.doc_len,
       (SELECT jsonb_object_agg(u.lexeme, u.positions) FROM unnest(m.tsv) AS u
        WHERE u.lexeme = ANY(%(lexemes)s::text[])),
       {kept}
FROM messages AS m
WHERE m.agent_id = %(agent)s AND m.tsv @@ %(query)s::tsquery
"""
SEARCH = _CANDIDATES.format(kept="true")
SEARCH_SESSION = _CANDIDATES.format(kept="m.session_id = %(session)s")

SELECT_BY_KEYS = f"""
SELECT m.session_id, {MESSAGE_COLUMNS} FROM messages AS m
WHERE m.agent_id = %s AND (m.session_id, m.seq) IN (SELECT * FROM unnest(%s::text[], %s::bigint[]))
"""


_KEY = "(m.session_id, m.seq)"
_RESULT = f"m.session_id, {MESSAGE_COLUMNS}"
#: BM25 ranked inside PostgreSQL (`ranking.bm25_statement`), for queries of single lexemes;
#: rows are the session id, MESSAGE_COLUMNS and the score.
RANKED = bm25_statement("messages", "m", _KEY, "true", _RESULT, MESSAGES)
RANKED_SESSION = bm25_statement(
    "messages", "m", _KEY, "m.session_id = %(session)s", _RESULT, MESSAGES
)
