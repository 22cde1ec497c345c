"""Vectors of key-value items, for the LangGraph store's `index` (SPEC 17, 18).

Storage model (migrations/NNNN_kv_vectors.sql): `kv_vectors(namespace, key, field, dims,
vector)`, one float32 unit-length row per embedded field of an item. The table's triggers
delete an item's vectors when the item is deleted (a delete, a TTL sweep) or its value
changes, so `put` only adds the new ones, in the caller's write transaction (the model ran
before it: nothing here embeds).

`scan` reads the live items under a namespace prefix and their vectors in ONE statement
(a compound SELECT), so the two always come from the same snapshot: a concurrent write
never pairs a new value with old vectors.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..rules.checks import check_text
from ..rules.encoding import now_ms
from .engine import Engine
from .kv import KVRow, prefix_upper_bound

__all__ = ["KVVectorRow", "SQLiteKVVectors"]

#: (namespace, key, vector BLOB) of one stored vector.
KVVectorRow = tuple[str, str, bytes]

_INSERT = """
INSERT OR REPLACE INTO kv_vectors(namespace, key, field, dims, vector)
VALUES (?1, ?2, ?3, ?4, ?5)
"""
# Items first (newest write first), then the vectors of the live items under the prefix
# whose dims are the index's. One statement: one snapshot for both.
_SCAN = """
SELECT 0, namespace, key, value, created_at, updated_at, rowid, updated_at FROM kv
WHERE namespace >= ?1 AND (?2 IS NULL OR namespace < ?2)
  AND (expires_at IS NULL OR expires_at > ?3)
UNION ALL
SELECT 1, v.namespace, v.key, v.vector, NULL, NULL, NULL, NULL
FROM kv_vectors AS v JOIN kv AS k ON k.namespace = v.namespace AND k.key = v.key
WHERE v.namespace >= ?1 AND (?2 IS NULL OR v.namespace < ?2) AND v.dims = ?4
  AND (k.expires_at IS NULL OR k.expires_at > ?3)
ORDER BY 1, 8 DESC, 7 DESC
"""


class SQLiteKVVectors:
    """Item vectors in one database; thread-safe."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def put(self, namespace: str, key: str, rows: Sequence[tuple[str, int, bytes]]) -> None:
        """Store `(field, dims, vector)` rows of an item written in the same (enclosing)
        write transaction."""
        if rows:
            with self._engine.write() as conn:
                conn.executemany(_INSERT, [(namespace, key, f, d, v) for f, d, v in rows])

    def scan(self, prefix: str, dims: int) -> tuple[list[KVRow], list[KVVectorRow]]:
        """Every live item whose namespace starts with `prefix` (newest write first), and
        the vectors of `dims` dimensions those items hold."""
        check_text(prefix, "prefix")
        items: list[KVRow] = []
        vectors: list[KVVectorRow] = []
        with self._engine.read() as conn:
            args = (prefix, prefix_upper_bound(prefix), now_ms(), dims)
            for row in conn.execute(_SCAN, args):
                if row[0]:
                    vectors.append((row[1], row[2], row[3]))
                else:
                    items.append((row[1], row[2], row[3], row[4], row[5]))
        return items, vectors
