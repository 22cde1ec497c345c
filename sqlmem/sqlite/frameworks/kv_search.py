"""Searching key-value items, for the LangGraph store: filtered pages, and item
vectors for its `index`.

Vectors (migrations/NNNN_kv_vectors.sql): `kv_vectors(namespace, key, field, dims,
vector)`, one float32 unit-length row per embedded field of an item. The table's triggers
delete an item's vectors when the item is deleted (a delete, a TTL sweep) or its value
changes, so `put_vectors` only adds the new ones, in the caller's write transaction (the
model ran before it: nothing here embeds).

Filters run in SQL, before any ranking or paging, as compiled conditions bound as ONE
JSON parameter (the SQL text never depends on the filter): `[[path, fallback_path, op,
arg], ...]`, each holding for an item when the value at `path` (or at `fallback_path`
when `path` is absent) passes `op`:

- `eq_null` / `ne_null`: absent or JSON null / neither;
- `eq_num` / `ne_num`: a number or a boolean equal to `arg` (true is 1, as Python and
  LangGraph's stores compare them) / not so (an absent value passes);
- `eq_str` / `ne_str`: a string equal to `arg` / not so;
- `gt_num gte_num lt_num lte_num`: a number (not a boolean) ordered against `arg`;
- `gt_str gte_str lt_str lte_str`: a string ordered against `arg` (code point order:
  SQLite compares UTF-8 bytes); any other op never holds.
The caller (`sqlmem.adapters.langgraph_filter`) compiles only what these express exactly
and checks the rest in Python.

Each call is one statement, so one snapshot: `scan` reads the items and their vectors in
one compound SELECT, and a concurrent write never pairs a new value with old vectors.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...rules.checks import check_text
from ...rules.encoding import now_ms
from ...rules.framework_rows import KVRow, KVVectorRow
from ..core.engine import Engine
from .kv import prefix_upper_bound

__all__ = ["KVVectorRow", "SQLiteKVSearch"]


_INSERT = """
INSERT OR REPLACE INTO kv_vectors(namespace, key, field, dims, vector)
VALUES (?1, ?2, ?3, ?4, ?5)
"""
# The conditions, unpacked once per statement (not once per item).
_CONDITIONS = """WITH c AS MATERIALIZED (
    SELECT value ->> 0 AS p0, value ->> 1 AS p1, value ->> 2 AS op, value ->> 3 AS arg
    FROM json_each(?4))"""
# The item at the condition's path (or its fallback): h.t its JSON type (NULL: absent),
# h.x its SQL value. The value is a BLOB of JSON text: CAST, or SQLite reads it as JSONB.
_AT = """(SELECT json_type(d.doc, d.p) AS t, json_extract(d.doc, d.p) AS x FROM (
    SELECT CAST(k.value AS TEXT) AS doc,
        CASE WHEN c.p0 = c.p1 OR json_type(CAST(k.value AS TEXT), c.p0) IS NOT NULL
        THEN c.p0 ELSE c.p1 END AS p) AS d) AS h"""
_NUM = "h.t IN ('integer', 'real')"
_SCALAR = "h.t IN ('true', 'false', 'integer', 'real')"
_HOLDS = f"""(NOT EXISTS (SELECT 1 FROM c WHERE NOT coalesce((
    SELECT CASE c.op
        WHEN 'eq_null' THEN h.t IS NULL OR h.t = 'null'
        WHEN 'ne_null' THEN h.t IS NOT NULL AND h.t != 'null'
        WHEN 'eq_num' THEN coalesce({_SCALAR} AND h.x = c.arg, 0)
        WHEN 'ne_num' THEN NOT coalesce({_SCALAR} AND h.x = c.arg, 0)
        WHEN 'eq_str' THEN coalesce(h.t = 'text' AND h.x = c.arg, 0)
        WHEN 'ne_str' THEN NOT coalesce(h.t = 'text' AND h.x = c.arg, 0)
        WHEN 'gt_num' THEN {_NUM} AND h.x > c.arg
        WHEN 'gte_num' THEN {_NUM} AND h.x >= c.arg
        WHEN 'lt_num' THEN {_NUM} AND h.x < c.arg
        WHEN 'lte_num' THEN {_NUM} AND h.x <= c.arg
        WHEN 'gt_str' THEN h.t = 'text' AND h.x > c.arg
        WHEN 'gte_str' THEN h.t = 'text' AND h.x >= c.arg
        WHEN 'lt_str' THEN h.t = 'text' AND h.x < c.arg
        WHEN 'lte_str' THEN h.t = 'text' AND h.x <= c.arg
        ELSE 0
    END FROM {_AT}), 0)))"""
_LIVE_UNDER = """k.namespace >= ?1 AND (?2 IS NULL OR k.namespace < ?2)
  AND (k.expires_at IS NULL OR k.expires_at > ?3)"""
# A page of the items under a prefix (that pass the filter), newest write first.
_PAGE_FROM = f"""
SELECT k.namespace, k.key, k.value, k.created_at, k.updated_at FROM kv AS k
WHERE {_LIVE_UNDER}"""
_PAGE_ORDER = "ORDER BY k.updated_at DESC, k.rowid DESC LIMIT ?5 OFFSET ?6"
_PAGE = f"{_CONDITIONS} {_PAGE_FROM} AND {_HOLDS} {_PAGE_ORDER}"
# The same items (all of them), then the vectors of `dims` dimensions they hold.
_SCAN_ITEMS = f"""
SELECT 0, k.namespace, k.key, k.value, k.created_at, k.updated_at, k.rowid, k.updated_at
FROM kv AS k WHERE {_LIVE_UNDER}"""
_SCAN_VECTORS = f"""
SELECT 1, v.namespace, v.key, v.vector, NULL, NULL, NULL, NULL
FROM kv_vectors AS v JOIN kv AS k ON k.namespace = v.namespace AND k.key = v.key
WHERE v.namespace >= ?1 AND (?2 IS NULL OR v.namespace < ?2) AND v.dims = ?5
  AND {_LIVE_UNDER}"""
_SCAN_ORDER = "ORDER BY 1, 8 DESC, 7 DESC"
_SCAN = f"""{_CONDITIONS} {_SCAN_ITEMS} AND {_HOLDS}
UNION ALL {_SCAN_VECTORS} AND {_HOLDS} {_SCAN_ORDER}"""
# A filter of one equality on a top-level field (the usual `{"kind": 3}`): the value's
# JSON is read once per item (the general statement reads it three times, through a
# correlated subquery per condition: ~3x slower). `json_extract(...) = ?7` is exact for a
# number (a JSON true/false reads as 1/0, as `eq_num` wants; text, objects and arrays
# never equal a number); a string must also be a JSON string (an object's JSON text is
# text too), checked only for the items that passed the cheap test.
_PAGE_EQUAL = f"""
SELECT k.namespace, k.key, k.value, k.created_at, k.updated_at FROM kv AS k
WHERE {_LIVE_UNDER} AND json_extract(CAST(k.value AS TEXT), ?4) = ?7
  AND (?8 = 0 OR json_type(CAST(k.value AS TEXT), ?4) = 'text')
{_PAGE_ORDER}"""
# Without a filter: the same statements without the predicate (SQLite would evaluate its
# correlated subquery for every item even when it holds no condition: 6x slower).
_NO_FILTER = "[]"
_PAGE_ALL = f"{_CONDITIONS} {_PAGE_FROM} {_PAGE_ORDER}"
_SCAN_ALL = f"{_CONDITIONS} {_SCAN_ITEMS} UNION ALL {_SCAN_VECTORS} {_SCAN_ORDER}"


class SQLiteKVSearch:
    """Filtered reads of kv items, and their vectors, in one database; thread-safe."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def put_vectors(self, namespace: str, key: str, rows: Sequence[tuple[str, int, bytes]]) -> None:
        """Store `(field, dims, vector)` rows of an item written in the same (enclosing)
        write transaction."""
        if rows:
            with self._engine.write() as conn:
                conn.executemany(_INSERT, [(namespace, key, f, d, v) for f, d, v in rows])

    def page(self, prefix: str, conditions: str, limit: int, offset: int) -> list[KVRow]:
        """The live items under `prefix` passing `conditions` (compiled JSON, see the
        module's docstring), newest write first, `offset` skipped, at most `limit` (-1:
        all)."""
        check_text(prefix, "prefix")
        with self._engine.read() as conn:
            args = (prefix, prefix_upper_bound(prefix), now_ms(), conditions, limit, offset)
            if conditions == _NO_FILTER:
                return conn.execute(_PAGE_ALL, args).fetchall()  # type: ignore[return-value]
            return conn.execute(_PAGE, args).fetchall()  # type: ignore[return-value]

    def page_equal(
        self, prefix: str, path: str, value: str | int | float, limit: int, offset: int
    ) -> list[KVRow]:
        """`page` for the one condition `eq_str` (a str `value`) or `eq_num` (a number)
        at the JSON `path` (no fallback path: a top-level field), faster."""
        check_text(prefix, "prefix")
        text = isinstance(value, str)
        with self._engine.read() as conn:
            args = (prefix, prefix_upper_bound(prefix), now_ms(), path, limit, offset, value, text)
            return conn.execute(_PAGE_EQUAL, args).fetchall()  # type: ignore[return-value]

    def scan(
        self, prefix: str, conditions: str, dims: int
    ) -> tuple[list[KVRow], list[KVVectorRow]]:
        """Every live item under `prefix` passing `conditions` (newest write first), and
        the vectors of `dims` dimensions those items hold."""
        check_text(prefix, "prefix")
        items: list[KVRow] = []
        vectors: list[KVVectorRow] = []
        with self._engine.read() as conn:
            args = (prefix, prefix_upper_bound(prefix), now_ms(), conditions, dims)
            if conditions == _NO_FILTER:
                cursor = conn.execute(_SCAN_ALL, args)
            else:
                cursor = conn.execute(_SCAN, args)
            for row in cursor:
                if row[0]:
                    vectors.append((row[1], row[2], row[3]))
                else:
                    items.append((row[1], row[2], row[3], row[4], row[5]))
        return items, vectors
