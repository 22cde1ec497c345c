"""SQL text of the message vectors (migrations/0010_message_vectors.sql): constants only,
every value bound."""

from __future__ import annotations

from typing import Any

import apsw

from .history_sql import MESSAGE_COLUMNS

__all__ = [
    "CANDIDATES_ALL",
    "CANDIDATES_SESSION",
    "FILL_ONE",
    "INSERT_BY_SEQ",
    "PENDING_PAGE",
    "ROWS_BY_PK",
    "STORED_BY_HASH",
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
CANDIDATES_ALL = (
    "SELECT v.message_pk, v.vector FROM message_vectors AS v"
    " CROSS JOIN messages AS m ON m.pk = v.message_pk"
    " WHERE v.model = :model AND v.dim = :dim"
    " AND m.session IN (SELECT pk FROM sessions WHERE typeof(session_id) = 'text')"
)

#: The ranked messages' rows, with their session's id.
ROWS_BY_PK = (
    f"SELECT m.pk, {MESSAGE_COLUMNS}, s.session_id FROM messages AS m"
    " CROSS JOIN sessions AS s ON s.pk = m.session"
    " WHERE m.pk IN (SELECT value FROM json_each(:pks))"
)


def count_without_vectors(conn: apsw.Connection, model: str | None) -> int:
    """Messages with text lacking a vector of `model` (of any model when None)."""
    row: Any = conn.execute(_WITHOUT_VECTORS, {"model": model}).fetchall()
    return int(row[0][0])
