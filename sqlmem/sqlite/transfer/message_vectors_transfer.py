"""Message vectors in the JSON Lines export and import (rules/export_vectors.py).

Exported after the summaries, one record per vector, so a restored file searches its
conversations by meaning at once, without calling a model. An export holding any is format
version 3 (`has_message_vectors` decides before the header is written; vectors appended
while a version-2 export runs are left out of it, as any write made during an export may
be). On import a vector is checked and normalised again before it is stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import apsw

from ...rules.export_format import ImportCounts
from ...rules.export_vectors import MessageVectorRow, message_vector_record
from ..stores import message_vectors_sql as sql

if TYPE_CHECKING:
    from ..db import MemoryDB

__all__ = ["export_message_vectors", "has_message_vectors", "import_message_vector"]

_PAGE = 500


def has_message_vectors(db: MemoryDB) -> bool:
    with db.engine.read() as conn:
        return bool(conn.execute(sql.ANY_VECTOR).fetchall())


def export_message_vectors(db: MemoryDB) -> Iterator[dict[str, Any]]:
    after: tuple[str, int] = ("", 0)
    while True:
        with db.engine.read() as conn:
            rows: list[Any] = conn.execute(sql.EXPORT_PAGE, (*after, _PAGE)).fetchall()
        for session_id, seq, model, dim, digest, blob in rows:
            yield message_vector_record(session_id, seq, model, dim, digest, blob)
        if len(rows) < _PAGE:
            return
        after = (rows[-1][0], rows[-1][1])


def import_message_vector(
    conn: apsw.Connection, row: MessageVectorRow, counts: ImportCounts
) -> None:
    """Store one message vector record (inside the import's transaction); skipped when its
    message is not there or holds another text than the vector was computed from, when it
    is unusable, or when the same vector is stored already (importing twice adds nothing)."""
    import numpy as np  # only imports that carry vectors load numpy

    from ...rules.history_modes import vector_text_ms
    from ...search.vectors import checked_rows, content_key, to_blob

    found: list[Any] = conn.execute(sql.IMPORT_TARGET, (row.session_id, row.seq)).fetchall()
    raw = np.frombuffer(row.data, dtype="<f4").reshape(1, row.dim).astype(np.float32)
    vector = checked_rows(raw, 1)[0]
    if not found or vector is None:
        counts.message_vectors_skipped += 1
        return
    pk, content, stored_model, stored, name, created_ms = found[0]
    # The text the vector was computed from (rules.history_modes.vector_text) must be
    # this message's: its content, speaker and day.
    if content_key(row.model, vector_text_ms(content, name, created_ms)) != row.content_hash:
        counts.message_vectors_skipped += 1
        return
    blob = to_blob(vector)
    if stored_model == row.model and stored == blob:
        counts.message_vectors_skipped += 1
        return
    conn.execute(
        sql.UPSERT_BY_PK,
        {"pk": pk, "model": row.model, "dim": row.dim, "hash": row.content_hash, "vector": blob},
    )
    counts.message_vectors += 1
