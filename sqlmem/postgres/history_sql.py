"""SQL text of the PostgreSQL history store. Every statement names one agent_id (Citus: one
shard); values are always bound."""

from __future__ import annotations

from .corpus_sql import LOCK_CORPUS, MESSAGES, STATS, UPDATE_STATS
from .ranking import bm25_statement

__all__ = [
    "APPEND",
    "APPEND_COLUMNS",
    "ARCHIVE",
    "AROUND",
    "COUNT",
    "COUNT_RANGE",
    "DELETE_MESSAGES",
    "DELETE_SESSION",
    "FIRST_NON_TOOL_AT_OR_BEFORE",
    "LISTED",
    "LOCK_CORPUS",
    "MAX_SEQ",
    "MESSAGES",
    "MESSAGE_COLUMNS",
    "OLDEST_KEPT",
    "POP",
    "POPPED",
    "SEARCH",
    "SEARCH_SESSION",
    "SELECT_ALL",
    "SELECT_ALL_ACTIVE",
    "SELECT_ARCHIVED_SEQ",
    "SELECT_BY_KEYS",
    "SELECT_RECENT",
    "SELECT_SESSION",
    "SELECT_SUMMARY",
    "SESSIONS",
    "SESSIONS_AFTER",
    "SESSIONS_ESCAPED",
    "SET_SUMMARY",
    "STATS",
    "UPDATE_STATS",
]

MAX_SEQ = 2**63 - 1

MESSAGE_COLUMNS = (
    "m.seq, m.role, m.content, m.name, m.tool_call_id, m.tool_calls, m.is_error, "
    "m.metadata, m.created_at"
)

# append / append_many in ONE statement (so in autocommit one round trip, no BEGIN or
# COMMIT): `st` adds the batch to the agent's statistics row, which it locks first (the
# same lock order as every writer of the agent's messages: statistics, then session);
# `r` takes the batch's seqs from the session's counter row (NULL past 2**63-1,
# refused by NOT NULL), and reads `st` so it runs after it; `m` inserts the rows,
# seq = last - count + their ordinal. Both rows are updated on their latest committed
# version (ON CONFLICT DO UPDATE), never from the statement's snapshot, so counts and
# seqs stay exact with any number of writers. The arrays are the rows' columns.
APPEND = f"""
WITH st AS (
    INSERT INTO corpus_stats AS c (agent_id, corpus, docs, tokens)
    VALUES (%(agent)s, {MESSAGES}, %(count)s, %(tokens)s)
    ON CONFLICT (agent_id, corpus) DO UPDATE
        SET docs = c.docs + excluded.docs, tokens = c.tokens + excluded.tokens
    RETURNING 1
), r AS (
    INSERT INTO sessions AS s (agent_id, session_id, last_seq, created_at, updated_at)
    SELECT %(agent)s, %(session)s, %(count)s, %(now)s, %(now)s FROM st
    ON CONFLICT (agent_id, session_id) DO UPDATE
        SET last_seq = CASE WHEN s.last_seq <= {MAX_SEQ} - excluded.last_seq
                       THEN s.last_seq + excluded.last_seq END,
            updated_at = excluded.updated_at
    RETURNING last_seq, archived_seq, holes
), m AS (
    INSERT INTO messages (agent_id, session_id, seq, role, content, name, tool_call_id,
                          tool_calls, is_error, metadata, created_at, doc_len, tsv)
    SELECT %(agent)s, %(session)s, r.last_seq - %(count)s + v.i, v.role, v.content, v.name,
           v.tool_call_id, v.tool_calls, v.is_error, v.metadata, v.created_at, v.doc_len,
           v.tsv
    FROM r CROSS JOIN unnest(
        %(role)s::text[], %(content)s::text[], %(name)s::text[], %(tool_call_id)s::text[],
        %(tool_calls)s::text[], %(is_error)s::boolean[], %(metadata)s::text[],
        %(created_at)s::bigint[], %(doc_len)s::integer[], %(tsv)s::tsvector[]
    ) WITH ORDINALITY AS v(role, content, name, tool_call_id, tool_calls, is_error, metadata,
                           created_at, doc_len, tsv, i)
)
SELECT last_seq, archived_seq, holes FROM r
"""
#: The columns of APPEND's arrays, in `PostgresHistoryStore._encode`'s order.
APPEND_COLUMNS = (
    "role", "content", "name", "tool_call_id", "tool_calls", "is_error", "metadata",
    "created_at", "doc_len", "tsv",
)  # fmt: skip

SELECT_SESSION = """
SELECT last_seq, archived_seq, holes FROM sessions
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

# Popped seqs leave holes (migrations/postgres/0002_items_and_pop.sql): still one row read.
COUNT = """
SELECT last_seq - archived_seq - holes FROM sessions WHERE agent_id = %s AND session_id = %s
"""
SELECT_SUMMARY = "SELECT summary FROM sessions WHERE agent_id = %s AND session_id = %s"
SELECT_ARCHIVED_SEQ = "SELECT archived_seq FROM sessions WHERE agent_id = %s AND session_id = %s"
SET_SUMMARY = """
INSERT INTO sessions AS s (agent_id, session_id, summary, created_at, updated_at)
VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (agent_id, session_id) DO UPDATE
    SET summary = excluded.summary, updated_at = excluded.updated_at
"""
#: A session `sessions()` lists (alias `s`): it holds a message (archived ones count) or a
#: summary; a session whose every message was popped or forgotten is not.
LISTED = """(s.summary != '' OR (s.last_seq > 0 AND (
    s.last_seq - s.archived_seq > s.holes OR EXISTS (
        SELECT 1 FROM messages AS m
        WHERE m.agent_id = s.agent_id AND m.session_id = s.session_id))))"""

SESSIONS = f"SELECT s.session_id FROM sessions AS s WHERE s.agent_id = %s AND {LISTED}"

#: A page of the listed sessions (`history.sessions(after=, limit=)`): the ids stored as
#: they are, walked in the primary key's order (session_id is COLLATE "C": code points)
#: from %(after)s, at most %(limit)s (NULL: all); and, apart, every escaped id (`codec`:
#: one holding NUL; rare), whose stored order is not its own, sorted after decoding.
SESSIONS_AFTER = f"""
SELECT s.session_id FROM sessions AS s
WHERE s.agent_id = %(agent)s AND s.session_id > %(after)s
    AND left(s.session_id, 1) <> chr(57344) AND {LISTED}
ORDER BY s.session_id LIMIT %(limit)s
"""
SESSIONS_ESCAPED = f"""
SELECT s.session_id FROM sessions AS s
WHERE s.agent_id = %(agent)s AND left(s.session_id, 1) = chr(57344) AND {LISTED}
"""

FIRST_NON_TOOL_AT_OR_BEFORE = """
SELECT seq FROM messages
WHERE agent_id = %s AND session_id = %s AND seq > %s AND seq <= %s AND role != 'tool'
ORDER BY seq DESC LIMIT 1
"""
# The last value: holes (popped seqs) the boundary passed, which no longer count.
ARCHIVE = """
UPDATE sessions SET archived_seq = greatest(archived_seq, %s), summary = coalesce(%s, summary),
                    updated_at = %s, holes = holes - %s
WHERE agent_id = %s AND session_id = %s
"""

# -- after a pop (0.2): seqs may have holes, so ranges are counted, not subtracted ----------

# The oldest message a compaction keeps: the (%s + 1)-th newest active one.
OLDEST_KEPT = """
SELECT seq FROM messages WHERE agent_id = %s AND session_id = %s AND seq > %s
ORDER BY seq DESC LIMIT 1 OFFSET %s
"""
# Messages in (%s, %s]: how many a boundary move archives when the session has holes.
COUNT_RANGE = """
SELECT count(*) FROM messages WHERE agent_id = %s AND session_id = %s AND seq > %s AND seq <= %s
"""

# pop(): the newest active message goes, returned in MESSAGE_COLUMNS' order with its
# length (for the statistics); then its seq is counted as a hole. last_seq stays, so the
# next append takes the next number: a seq is never used twice.
POP = f"""
DELETE FROM messages AS m
WHERE m.agent_id = %(agent)s AND m.session_id = %(session)s AND m.seq = (
    SELECT seq FROM messages
    WHERE agent_id = %(agent)s AND session_id = %(session)s AND seq > %(archived)s
    ORDER BY seq DESC LIMIT 1)
RETURNING {MESSAGE_COLUMNS}, m.doc_len
"""
POPPED = """
UPDATE sessions SET holes = holes + 1, updated_at = %(now)s
WHERE agent_id = %(agent)s AND session_id = %(session)s
"""

# around(): the message at %(seq)s and up to %(before)s messages before it, then up to
# %(after)s after it, archived included; two range scans of the primary key in one
# statement (one snapshot); the store orders the few rows by seq.
AROUND = f"""
(SELECT {MESSAGE_COLUMNS} FROM messages AS m
 WHERE m.agent_id = %(agent)s AND m.session_id = %(session)s AND m.seq <= %(seq)s
 ORDER BY m.seq DESC LIMIT %(before)s)
UNION ALL
(SELECT {MESSAGE_COLUMNS} FROM messages AS m
 WHERE m.agent_id = %(agent)s AND m.session_id = %(session)s AND m.seq > %(seq)s
 ORDER BY m.seq LIMIT %(after)s)
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
