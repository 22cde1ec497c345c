"""SQL text of the message vectors (migrations/0010_message_vectors.sql): constants only,
every value bound."""

from __future__ import annotations

from typing import Any

import apsw

from .history_sql import MESSAGE_COLUMNS

__all__ = [
    "ANY_VECTOR",
    "CANDIDATES_ALL",
    "CANDIDATES_LIVE",
    "CANDIDATES_SESSION",
    "EXPORT_PAGE",
    "FILL_ONE",
    "IMPORT_TARGET",
    "INSERT_BY_SEQ",
    "PENDING_PAGE",
    "ROWS_BY_PK",
    "STORED_BY_HASH",
    "UPSERT_BY_PK",
    "count_without_vectors",
]

_SET = (
    " ON CONFLICT(message_pk) DO UPDATE SET model = excluded.model, dim = excluded.dim,"
    " content_hash = excluded.content_hash, vector = excluded.vector"
)

#: A message's vector, written in the append's own transaction right after its insert
#: (the message is found by its session and seq: the UNIQUE (session, seq) index).
INSERT_BY_SEQ = (
    "INSERT INTO message_vectors(message_pk, model, dim, content_hash, vector)"
    " SELECT pk, :model, :dim, :hash, :vector FROM messages"
    " WHERE session = :session AND seq = :seq" + _SET
)

#: embed_pending's write: only if the message still holds the text that was embedded.
FILL_ONE = (
    "INSERT INTO message_vectors(message_pk, model, dim, content_hash, vector)"
    " SELECT pk, :model, :dim, :hash, :vector FROM messages"
    " WHERE pk = :pk AND content = :content" + _SET
)

#: Vectors already stored for these texts (the embedding cache), by content hash.
STORED_BY_HASH = (
    "SELECT content_hash, vector FROM message_vectors"
    " WHERE content_hash IN (SELECT value FROM json_each(:hashes)) AND model = :model"
    " GROUP BY content_hash"
)

#: Messages of live sessions (a session being purged has a BLOB id) that have text.
_LIVE_WITH_TEXT = (
    "m.content <> '' AND m.session IN (SELECT pk FROM sessions WHERE typeof(session_id) = 'text')"
)
_MISSING = (
    "NOT EXISTS (SELECT 1 FROM message_vectors AS v WHERE v.message_pk = m.pk"
    " AND v.model IS coalesce(:model, v.model))"
)

#: Messages with text but without a vector of the store's model (of any when :model is NULL).
_WITHOUT_VECTORS = f"SELECT count(*) FROM messages AS m WHERE {_LIVE_WITH_TEXT} AND {_MISSING}"

PENDING_PAGE = (
    "SELECT m.pk, m.content, m.name, m.created_at FROM messages AS m"
    f" WHERE m.pk > :after AND {_LIVE_WITH_TEXT}"
    f" AND {_MISSING} ORDER BY m.pk LIMIT :limit"
)

#: (pk, vector) of one session's messages with a vector of the query's model and
#: dimension: the session filter drives (its (session, seq) index), so a search in one
#: session reads that session's vectors only, whatever else the file holds.
CANDIDATES_SESSION = (
    "SELECT m.pk, v.vector FROM messages AS m"
    " CROSS JOIN message_vectors AS v ON v.message_pk = m.pk"
    " WHERE m.session = (SELECT pk FROM sessions WHERE session_id = :session)"
    " AND v.model = :model AND v.dim = :dim"
)

#: The same over every live session.
CANDIDATES_LIVE = (
    "SELECT v.message_pk, v.vector FROM message_vectors AS v"
    " CROSS JOIN messages AS m ON m.pk = v.message_pk"
    " WHERE v.model = :model AND v.dim = :dim"
    " AND m.session IN (SELECT pk FROM sessions WHERE typeof(session_id) = 'text')"
)
#: ... and over every session when no purge is under way (no detached session): the vectors
#: alone, without reading each message's row (a third less time on 700 messages).
CANDIDATES_ALL = (
    "SELECT message_pk, vector FROM message_vectors WHERE model = :model AND dim = :dim"
)

#: The ranked messages' rows, with their session's id (none of a session being purged).
ROWS_BY_PK = (
    f"SELECT m.pk, {MESSAGE_COLUMNS}, s.session_id FROM messages AS m"
    " CROSS JOIN sessions AS s ON s.pk = m.session"
    " WHERE m.pk IN (SELECT value FROM json_each(:pks)) AND typeof(s.session_id) = 'text'"
)


def count_without_vectors(conn: apsw.Connection, model: str | None) -> int:
    """Messages with text lacking a vector of `model` (of any model when None)."""
    row: Any = conn.execute(_WITHOUT_VECTORS, {"model": model}).fetchall()
    return int(row[0][0])


#: Whether the file holds any message vector (the export's format version depends on it).
ANY_VECTOR = "SELECT 1 FROM message_vectors LIMIT 1"

#: Export: the live sessions' message vectors, a page at a time, in (session_id, seq) order
#: like the messages.
EXPORT_PAGE = """
SELECT s.session_id, m.seq, v.model, v.dim, v.content_hash, v.vector
FROM sessions AS s CROSS JOIN messages AS m ON m.session = s.pk
CROSS JOIN message_vectors AS v ON v.message_pk = m.pk
WHERE (s.session_id, m.seq) > (?, ?) AND typeof(s.session_id) = 'text'
ORDER BY s.session_id, m.seq
LIMIT ?
"""

#: Import: the message a vector record belongs to, and what is stored for it.
IMPORT_TARGET = """
SELECT m.pk, m.content, v.model, v.vector, m.name, m.created_at
FROM sessions AS s CROSS JOIN messages AS m ON m.session = s.pk
LEFT JOIN message_vectors AS v ON v.message_pk = m.pk
WHERE s.session_id = ? AND m.seq = ?
"""
UPSERT_BY_PK = (
    "INSERT INTO message_vectors(message_pk, model, dim, content_hash, vector)"
    " VALUES (:pk, :model, :dim, :hash, :vector)" + _SET
)
