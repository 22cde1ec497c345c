"""Fact vectors in the JSON Lines export and import (stored as base64 text, so the
export stays plain JSON).

Exported after the facts, one record per vector, so a restored file searches by meaning
at once, without calling a model. On import a vector is checked (finite, of the stated
size) and normalised again before it is stored: the file may come from anywhere.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import apsw

from ...rules.encoding import now_ms
from ...rules.export_format import ImportCounts, VectorRow
from ..stores import vectors_sql as sql

if TYPE_CHECKING:
    from ..db import MemoryDB

__all__ = ["export_vectors", "import_vector"]

_PAGE = 500


def export_vectors(db: MemoryDB) -> Iterator[dict[str, Any]]:
    after = 0
    while True:
        with db.engine.read() as conn:
            params = {"after": after, "limit": _PAGE, "now": now_ms()}
            rows: list[Any] = conn.execute(sql.EXPORT_PAGE, params).fetchall()
        for _, fact_id, model, dim, blob in rows:
            yield {
                "type": "vector",
                "id": fact_id,
                "model": model,
                "dim": dim,
                "data": base64.b64encode(blob).decode("ascii"),
            }
        if len(rows) < _PAGE:
            return
        after = rows[-1][0]


def import_vector(conn: apsw.Connection, row: VectorRow, counts: ImportCounts) -> None:
    """Store one vector record (inside the import's transaction, after the facts of its
    batch); skipped when its fact is not there, when it is unusable, or when the same
    vector is stored already (importing twice adds nothing)."""
    import numpy as np  # only imports that carry vectors load numpy

    from ...search.vectors import checked_rows, content_key, to_blob

    found: list[Any] = conn.execute(sql.IMPORT_TARGET, (row.id,)).fetchall()
    raw = np.frombuffer(row.data, dtype="<f4").reshape(1, row.dim).astype(np.float32)
    vector = checked_rows(raw, 1)[0]
    if not found or vector is None:
        counts.vectors_skipped += 1
        return
    pk, content, stored_model, stored = found[0]
    blob = to_blob(vector)
    if stored_model == row.model and stored == blob:
        counts.vectors_skipped += 1
        return
    conn.execute(
        sql.UPSERT_BY_PK,
        {
            "pk": pk,
            "model": row.model,
            "dim": row.dim,
            "hash": content_key(row.model, content),
            "vector": blob,
        },
    )
    counts.vectors += 1
