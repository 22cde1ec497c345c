"""Message vectors in the export and import of one PostgreSQL agent (rules/export_vectors.py),
as `sqlmem.sqlite.transfer.message_vectors_transfer` does for the SQLite file: exported after the
summaries (an export holding any is format version 3), checked and normalised again on
import, skipped when the message is not there or the same vector is stored already."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..rules.export_format import ImportCounts
from ..rules.export_vectors import MessageVectorRow, message_vector_record
from .codec import decode, encode
from .engine import Conn
from .message_vectors_sql import FILL_ONE

if TYPE_CHECKING:
    from . import PostgresDB

__all__ = ["export_message_vectors", "has_message_vectors", "import_message_vector"]

_PAGE = 500

_ANY = "SELECT 1 FROM message_vectors WHERE agent_id = %s LIMIT 1"
_EXPORT_PAGE = """
SELECT session_id, seq, model, dim, content_hash, vector FROM message_vectors
WHERE agent_id = %s AND (session_id, seq) > (%s, %s)
ORDER BY session_id, seq LIMIT %s
"""
_TARGET = """
SELECT m.content, v.model, v.vector, m.name, m.created_at FROM messages AS m
LEFT JOIN message_vectors AS v
    ON v.agent_id = m.agent_id AND v.session_id = m.session_id AND v.seq = m.seq
WHERE m.agent_id = %s AND m.session_id = %s AND m.seq = %s
"""


def has_message_vectors(db: PostgresDB) -> bool:
    with db._engine.read() as conn:
        return conn.execute(_ANY, (db.agent_id,)).fetchone() is not None


def export_message_vectors(db: PostgresDB) -> Iterator[dict[str, Any]]:
    after: tuple[str, int] = ("", 0)
    while True:
        with db._engine.read() as conn:
            rows = conn.execute(_EXPORT_PAGE, (db.agent_id, *after, _PAGE)).fetchall()
        for session, seq, model, dim, digest, blob in rows:
            yield message_vector_record(decode(session), seq, model, dim, digest, bytes(blob))
        if len(rows) < _PAGE:
            return
        after = (rows[-1][0], rows[-1][1])


def import_message_vector(
    conn: Conn, agent: str, row: MessageVectorRow, counts: ImportCounts
) -> None:
    """Store one message vector record in the import's transaction (after its message);
    skipped as on SQLite (`sqlite.message_vectors_transfer.import_message_vector`)."""
    import numpy as np  # only imports that carry vectors load numpy

    from ..rules.history_modes import vector_text_ms
    from ..search.vectors import checked_rows, content_key, to_blob

    session = encode(row.session_id)
    found = conn.execute(_TARGET, (agent, session, row.seq)).fetchone()
    raw = np.frombuffer(row.data, dtype="<f4").reshape(1, row.dim).astype(np.float32)
    vector = checked_rows(raw, 1)[0]
    if found is None or vector is None:
        counts.message_vectors_skipped += 1
        return
    content, model, stored, name, created_ms = found
    text = vector_text_ms(decode(content), decode(name), created_ms)
    if content_key(row.model, text) != row.content_hash:  # computed from another text
        counts.message_vectors_skipped += 1
        return
    blob = to_blob(vector)
    if model == row.model and stored is not None and bytes(stored) == blob:
        counts.message_vectors_skipped += 1
        return
    conn.execute(
        FILL_ONE,
        {
            "agent": agent,
            "session": session,
            "seq": row.seq,
            "content": content,
            "model": row.model,
            "dim": row.dim,
            "hash": row.content_hash,
            "vector": blob,
        },
    )
    counts.message_vectors += 1
