"""SQL text of the PostgreSQL export and import (`sqlmem.postgres.transfer`): constants,
every value bound, every statement naming one agent_id."""

from __future__ import annotations

from .facts_sql import FACT_COLUMNS, LIVE

__all__ = [
    "EXPORT_FACTS_PAGE",
    "EXPORT_MESSAGES_PAGE",
    "EXPORT_SESSIONS_PAGE",
    "EXPORT_VECTORS_PAGE",
    "IMPORT_MESSAGE",
    "IMPORT_SESSION",
    "IMPORT_VECTOR_TARGET",
    "RECOUNT_HOLES",
    "SELECT_SUMMARY",
]

# Pages by key: (session_id, seq) for messages, session_id for sessions, pk for facts.
EXPORT_MESSAGES_PAGE = """
SELECT m.session_id, m.seq, m.seq <= s.archived_seq, m.role, m.content, m.name,
       m.tool_call_id, m.tool_calls, m.is_error, m.metadata, m.created_at
FROM messages AS m
JOIN sessions AS s ON s.agent_id = m.agent_id AND s.session_id = m.session_id
WHERE m.agent_id = %s AND (m.session_id, m.seq) > (%s, %s)
ORDER BY m.session_id, m.seq LIMIT %s
"""
EXPORT_SESSIONS_PAGE = """
SELECT session_id, summary, archived_seq FROM sessions
WHERE agent_id = %s AND session_id > %s AND (summary <> '' OR archived_seq > 0)
ORDER BY session_id LIMIT %s
"""
EXPORT_FACTS_PAGE = f"""
SELECT f.pk, {FACT_COLUMNS} FROM facts AS f
WHERE f.agent_id = %(agent)s AND f.pk > %(after)s AND {LIVE}
ORDER BY f.pk LIMIT %(limit)s
"""
EXPORT_VECTORS_PAGE = f"""
SELECT f.pk, f.id, v.model, v.dim, v.vector FROM fact_vectors AS v
JOIN facts AS f ON f.agent_id = v.agent_id AND f.pk = v.fact_pk
WHERE v.agent_id = %(agent)s AND f.pk > %(after)s AND {LIVE}
ORDER BY f.pk LIMIT %(limit)s
"""

# Import merges a session as the SQLite import does (sqlite/history_sql.py): counter and
# boundary only move forward; a summary replaces the stored one when there is none or when
# it belongs to a boundary at least as far.
IMPORT_SESSION = """
INSERT INTO sessions AS s (agent_id, session_id, last_seq, archived_seq, summary, created_at,
                           updated_at)
VALUES (%(agent)s, %(session)s, %(last)s, %(archived)s, %(summary)s, %(now)s, %(now)s)
ON CONFLICT (agent_id, session_id) DO UPDATE SET
    summary = CASE
        WHEN %(has_summary)s AND (s.summary = '' OR excluded.archived_seq >= s.archived_seq)
        THEN excluded.summary ELSE s.summary END,
    last_seq = greatest(s.last_seq, excluded.last_seq),
    archived_seq = greatest(s.archived_seq, excluded.archived_seq),
    updated_at = CASE
        WHEN s.last_seq < excluded.last_seq OR s.archived_seq < excluded.archived_seq
          OR (%(has_summary)s AND s.summary IS DISTINCT FROM excluded.summary
              AND (s.summary = '' OR excluded.archived_seq >= s.archived_seq))
        THEN excluded.updated_at ELSE s.updated_at END
"""
SELECT_SUMMARY = "SELECT summary FROM sessions WHERE agent_id = %s AND session_id = %s"

# A message already there under its (session, seq) is left as it is.
IMPORT_MESSAGE = """
INSERT INTO messages (agent_id, session_id, seq, role, content, name, tool_call_id,
                      tool_calls, is_error, metadata, created_at, doc_len, tsv)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector)
ON CONFLICT (agent_id, session_id, seq) DO NOTHING
"""

# Seqs below the counter with no message (popped ones, or gaps in a hand-made file) are
# counted again for the sessions an import touched (history.py: `holes`).
RECOUNT_HOLES = """
UPDATE sessions AS s SET holes = s.last_seq - s.archived_seq - (
    SELECT count(*) FROM messages AS m
    WHERE m.agent_id = s.agent_id AND m.session_id = s.session_id AND m.seq > s.archived_seq)
WHERE s.agent_id = %s AND s.session_id = ANY(%s)
"""

IMPORT_VECTOR_TARGET = f"""
SELECT f.content, v.model, v.vector FROM facts AS f
LEFT JOIN fact_vectors AS v ON v.agent_id = f.agent_id AND v.fact_pk = f.pk
WHERE f.agent_id = %(agent)s AND f.id = %(id)s AND {LIVE}
"""
