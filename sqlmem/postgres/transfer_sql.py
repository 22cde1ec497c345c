"""SQL text of the PostgreSQL export and import (`sqlmem.postgres.transfer`): constants,
every value bound, every statement naming one agent_id."""

from __future__ import annotations

from .facts_sql import FACT_COLUMNS, UNEXPIRED
from .history_sql import SELECT_SUMMARY

__all__ = [
    "ADD_REVISION",
    "EXPORT_DOCUMENTS_PAGE",
    "EXPORT_FACTS_PAGE",
    "EXPORT_MESSAGES_PAGE",
    "EXPORT_REVISIONS_PAGE",
    "EXPORT_SESSIONS_PAGE",
    "EXPORT_VECTORS_PAGE",
    "IMPORT_DOCUMENT",
    "IMPORT_MESSAGE",
    "IMPORT_SESSION",
    "IMPORT_VECTOR_TARGET",
    "KEEP_CURRENT",
    "RECOUNT_HOLES",
    "REPLACE_DOCUMENT",
    "SELECT_SUMMARY",
    "STORED_DOCUMENT",
    "STORED_REVISION",
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
WHERE f.agent_id = %(agent)s AND f.pk > %(after)s AND {UNEXPIRED}
ORDER BY f.pk LIMIT %(limit)s
"""
EXPORT_VECTORS_PAGE = f"""
SELECT f.pk, f.id, v.model, v.dim, v.vector FROM fact_vectors AS v
JOIN facts AS f ON f.agent_id = v.agent_id AND f.pk = v.fact_pk
WHERE v.agent_id = %(agent)s AND f.pk > %(after)s AND {UNEXPIRED}
ORDER BY f.pk LIMIT %(limit)s
"""

# Import merges a session as the SQLite import does (sqlite/history_sql.py): counter and
# boundary only move forward; a summary replaces the stored one when there is none or when
# it belongs to a boundary at least as far. Returns (ref, summary): the session id, and
# the summary the session now has.
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
RETURNING session_id, summary
"""

# A message already there under its (session, seq) is left as it is.
IMPORT_MESSAGE = """
INSERT INTO messages (agent_id, session_id, seq, role, content, name, tool_call_id,
                      tool_calls, is_error, metadata, created_at, doc_len, tsv)
VALUES (%(agent)s, %(ref)s, %(seq)s, %(role)s, %(content)s, %(name)s, %(tool_call_id)s,
        %(tool_calls)s, %(is_error)s, %(metadata)s, %(created_at)s, %(doc_len)s,
        %(tsv)s::tsvector)
ON CONFLICT (agent_id, session_id, seq) DO NOTHING
"""

# Seqs below the counter with no message (popped ones, or gaps in a hand-made file) are
# counted again for the sessions an import touched (history.py: `holes`).
RECOUNT_HOLES = """
UPDATE sessions AS s SET holes = s.last_seq - s.archived_seq - (
    SELECT count(*) FROM messages AS m
    WHERE m.agent_id = s.agent_id AND m.session_id = s.session_id AND m.seq > s.archived_seq)
WHERE s.agent_id = %(agent)s AND s.session_id = ANY(%(sessions)s)
"""

IMPORT_VECTOR_TARGET = f"""
SELECT f.content, v.model, v.vector FROM facts AS f
LEFT JOIN fact_vectors AS v ON v.agent_id = f.agent_id AND v.fact_pk = f.pk
WHERE f.agent_id = %(agent)s AND f.id = %(id)s AND {UNEXPIRED}
"""

# -- documents (sqlmem.postgres.docs_transfer) -------------------------------------------------

_DOC = "agent_id = %(agent)s AND path = %(path)s"

# Pages by key: path for documents, (path, revision) for kept revisions. Paths are never
# empty, so the first page starts after "".
EXPORT_DOCUMENTS_PAGE = """
SELECT path, content, enabled, sort_order, revision, created_at, updated_at FROM documents
WHERE agent_id = %s AND path > %s ORDER BY path LIMIT %s
"""
EXPORT_REVISIONS_PAGE = """
SELECT path, revision, content, updated_at FROM document_revisions
WHERE agent_id = %s AND (path, revision) > (%s, %s) ORDER BY path, revision LIMIT %s
"""
#: What the merge decides on, the row locked (a concurrent set_enabled waits for it).
STORED_DOCUMENT = f"SELECT revision, updated_at, content FROM documents WHERE {_DOC} FOR UPDATE"
STORED_REVISION = f"SELECT revision FROM documents WHERE {_DOC}"
#: A document the agent does not have, with the file's revision and timestamps.
IMPORT_DOCUMENT = """
INSERT INTO documents (agent_id, path, enabled, sort_order, revision, size, created_at,
                       updated_at, content)
VALUES (%(agent)s, %(path)s, %(enabled)s, %(order)s, %(revision)s, %(size)s, %(created)s,
        %(updated)s, %(content)s)
"""
REPLACE_DOCUMENT = f"""
UPDATE documents SET enabled = %(enabled)s, sort_order = %(order)s, revision = %(revision)s,
    size = %(size)s, created_at = %(created)s, updated_at = %(updated)s, content = %(content)s
WHERE {_DOC}
"""
#: The stored content becomes a kept revision before a newer one replaces it (copied in
#: the server); already kept under its number: left as it is.
KEEP_CURRENT = f"""
INSERT INTO document_revisions (agent_id, path, revision, size, updated_at, content)
SELECT agent_id, path, revision, size, updated_at, content FROM documents WHERE {_DOC}
ON CONFLICT (agent_id, path, revision) DO NOTHING
"""
#: A kept revision of a stored document; one already kept under its number stays.
ADD_REVISION = """
INSERT INTO document_revisions (agent_id, path, revision, size, updated_at, content)
VALUES (%(agent)s, %(path)s, %(revision)s, %(size)s, %(updated)s, %(content)s)
ON CONFLICT (agent_id, path, revision) DO NOTHING
"""

#: Whether the agent has a fact with a key, a valid time or a link (the export is then
#: format 3): probes of the partial indexes holding only such facts.
ANY_CHANGING = """
SELECT 1 WHERE EXISTS (SELECT 1 FROM facts WHERE agent_id = %s AND chain IS NOT NULL)
    OR EXISTS (SELECT 1 FROM facts WHERE agent_id = %s AND valid_from IS NOT NULL)
"""
