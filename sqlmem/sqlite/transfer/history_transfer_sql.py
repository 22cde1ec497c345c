"""SQL text of the history's export and import (sqlite/export.py, sqlite/importer.py).

They restore seqs, timestamps and the archive boundary exactly, which the history store's
own statements (`history_sql`) assign themselves; so they have statements of their own,
over the same tables (migrations/0001_initial.sql), constants so the statement cache is
always hit.
"""

from __future__ import annotations

from ..stores.history_sql import SELECT_SUMMARY

__all__ = [
    "EXPORT_MESSAGES_PAGE",
    "EXPORT_SESSIONS_PAGE",
    "IMPORT_MESSAGE",
    "IMPORT_SESSION",
    "RECOUNT_HOLES",
    "SELECT_SUMMARY",
]

# Export pages, by key. Sessions in session_id order (its UNIQUE index), so an export of an
# import is the same file whatever order the sessions were created in. A BLOB session_id
# is a session being purged (history_sql's purge notes): gone for every read, so for the
# export too.
EXPORT_MESSAGES_PAGE = """
SELECT s.session_id, m.seq, m.seq <= s.archived_seq, m.role, m.content, m.name,
       m.tool_call_id, m.tool_calls, m.is_error, m.metadata, m.created_at
FROM sessions AS s CROSS JOIN messages AS m ON m.session = s.pk
WHERE (s.session_id, m.seq) > (?, ?) AND typeof(s.session_id) = 'text'
ORDER BY s.session_id, m.seq
LIMIT ?
"""
# Sessions with neither a summary nor archived messages say nothing their messages don't.
EXPORT_SESSIONS_PAGE = """
SELECT session_id, summary, archived_seq FROM sessions
WHERE session_id > ? AND (summary != '' OR archived_seq > 0)
ORDER BY session_id LIMIT ?
"""

# Import merges a session: counters and boundary only move forward; a summary replaces the
# stored one when there is none or when it belongs to a boundary at least as far.
IMPORT_SESSION = """
INSERT INTO sessions(session_id, unindexed, summary, last_seq, archived_seq, created_at,
                     updated_at)
VALUES (:session, :unindexed, :summary, :last, :archived, :now, :now)
ON CONFLICT(session_id) DO UPDATE SET
    unindexed = max(sessions.unindexed, excluded.unindexed),
    summary = CASE
        WHEN :has_summary AND (sessions.summary = ''
                               OR excluded.archived_seq >= sessions.archived_seq)
        THEN excluded.summary ELSE sessions.summary END,
    last_seq = max(sessions.last_seq, excluded.last_seq),
    archived_seq = max(sessions.archived_seq, excluded.archived_seq),
    updated_at = CASE
        WHEN sessions.last_seq < excluded.last_seq
          OR sessions.archived_seq < excluded.archived_seq
          OR (:has_summary AND sessions.summary IS NOT excluded.summary
              AND (sessions.summary = '' OR excluded.archived_seq >= sessions.archived_seq))
        THEN excluded.updated_at ELSE sessions.updated_at END
RETURNING pk, summary
"""
# A message already there under its (session, seq) is left as it is. The importer binds
# the values in this order.
IMPORT_MESSAGE = """
INSERT INTO messages(session, seq, role, content, name, tool_call_id, tool_calls, is_error,
                     metadata, created_at, searchable, search_text)
VALUES (:ref, :seq, :role, :content, :name, :tool_call_id, :tool_calls, :is_error,
        :metadata, :created_at, :searchable, :search_text)
ON CONFLICT(session, seq) DO NOTHING
"""

# An import may bring messages with holes (an export of a session that popped): the
# sessions it touched (:sessions, a JSON array of pks) count theirs again.
RECOUNT_HOLES = """
UPDATE sessions
SET holes = last_seq - archived_seq
    - (SELECT count(*) FROM messages WHERE session = sessions.pk AND seq > sessions.archived_seq)
WHERE pk IN (SELECT value FROM json_each(:sessions))
"""
