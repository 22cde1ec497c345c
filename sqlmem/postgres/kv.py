"""The frameworks' key-value items of one agent on PostgreSQL (tables `kv`, `kv_vectors`,
migrations/postgres/NNNN_framework_records.sql): the key-value and search ports of
`sqlmem.adapters.ports`, with the SQLite file's semantics.

Namespaces, keys and fields are stored as UTF-8 bytes (their byte order is code point
order), so a namespace prefix is one range of the primary key. Every statement names the
agent. Filters: the rows under the prefix are read in one statement and the compiled
filter runs in Python (`sqlmem.rules.kv_conditions`, the meaning the SQLite statement
has); a search without a filter pages in SQL.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..rules.checks import check_text
from ..rules.encoding import now_ms
from ..rules.framework_rows import KVRow, KVVectorRow
from ..rules.kv_checks import (
    bytes_value,
    check_key,
    check_namespace,
    check_ttl_ms,
    checked_keys,
    pairs,
    prefix_upper_bound,
)
from ..rules.kv_conditions import compile_conditions, equality_test, page_of
from .engine import Engine

__all__ = ["PostgresKVSearch", "PostgresKeyValueStore"]

_LIVE = "(expires_at IS NULL OR expires_at > %(now)s)"
_ROW_COLUMNS = "namespace, key, value, created_at, updated_at"
_ROWS = f"""SELECT {_ROW_COLUMNS} FROM kv
WHERE agent_id = %(agent)s AND ns_hash = %(nsh)s AND key_hash = ANY(%(khs)s) AND {_LIVE}"""
_ROW = f"""SELECT {_ROW_COLUMNS} FROM kv
WHERE agent_id = %(agent)s AND ns_hash = %(nsh)s AND key_hash = %(kh)s AND {_LIVE}"""
# The truncated bounds select through the kv_namespaces index; the exact ones decide.
_UNDER = """agent_id = %(agent)s
  AND substring(namespace FROM 1 FOR 1024) >= substring(%(lo)s FROM 1 FOR 1024)
  AND (%(hi)s::bytea IS NULL
      OR substring(namespace FROM 1 FOR 1024) <= substring(%(hi)s::bytea FROM 1 FOR 1024))
  AND namespace >= %(lo)s AND (%(hi)s::bytea IS NULL OR namespace < %(hi)s::bytea)"""
_SCAN = f"""SELECT {_ROW_COLUMNS} FROM kv WHERE {_UNDER} AND {_LIVE}
ORDER BY updated_at DESC, write_seq DESC LIMIT %(limit)s OFFSET %(offset)s"""
_NAMESPACES = f"SELECT DISTINCT namespace FROM kv WHERE {_UNDER} AND {_LIVE} ORDER BY namespace"
_VECTORS = """SELECT kv.namespace, kv.key, v.vector FROM kv
JOIN kv_vectors AS v ON v.agent_id = kv.agent_id AND v.ns_hash = kv.ns_hash
    AND v.key_hash = kv.key_hash
WHERE kv.agent_id = %(agent)s
  AND substring(kv.namespace FROM 1 FOR 1024) >= substring(%(lo)s FROM 1 FOR 1024)
  AND (%(hi)s::bytea IS NULL
      OR substring(kv.namespace FROM 1 FOR 1024) <= substring(%(hi)s::bytea FROM 1 FOR 1024))
  AND kv.namespace >= %(lo)s AND (%(hi)s::bytea IS NULL OR kv.namespace < %(hi)s::bytea)
  AND v.dims = %(dims)s AND (kv.expires_at IS NULL OR kv.expires_at > %(now)s)"""
_UPSERT = """INSERT INTO kv (agent_id, ns_hash, key_hash, namespace, key, value, created_at,
    updated_at, ttl_ms, expires_at)
VALUES (%(agent)s, %(nsh)s, %(kh)s, %(ns)s, %(key)s, %(value)s, %(now)s, %(now)s,
    %(ttl)s::bigint, %(now)s::bigint + %(ttl)s::bigint)
ON CONFLICT (agent_id, ns_hash, key_hash) DO UPDATE SET value = excluded.value,
    updated_at = excluded.updated_at, ttl_ms = excluded.ttl_ms,
    expires_at = excluded.expires_at"""
_DELETE = (
    "DELETE FROM kv WHERE agent_id = %(agent)s AND ns_hash = %(nsh)s AND key_hash = ANY(%(khs)s)"
)
_REFRESH = """UPDATE kv SET expires_at = %(now)s + ttl_ms
WHERE agent_id = %(agent)s AND ns_hash = %(nsh)s AND key_hash = ANY(%(khs)s)
  AND ttl_ms IS NOT NULL AND expires_at > %(now)s"""
_KEYS = f"""SELECT key FROM kv
WHERE agent_id = %(agent)s AND ns_hash = %(nsh)s AND key >= %(lo)s
  AND (%(after)s::bytea IS NULL OR key > %(after)s::bytea)
  AND (%(hi)s::bytea IS NULL OR key < %(hi)s::bytea) AND {_LIVE}
ORDER BY key LIMIT %(limit)s"""
_SWEEP = "DELETE FROM kv WHERE agent_id = %(agent)s AND expires_at <= %(now)s"
_PUT_VECTOR = """INSERT INTO kv_vectors (agent_id, ns_hash, key_hash, field, dims, vector)
VALUES (%(agent)s, %(nsh)s, %(kh)s, %(field)s, %(dims)s, %(vector)s)
ON CONFLICT (agent_id, ns_hash, key_hash, field) DO UPDATE SET dims = excluded.dims,
    vector = excluded.vector"""

#: Keys read per statement by `keys()`.
KEYS_PAGE = 1000


def _b(text: str) -> bytes:
    return text.encode("utf-8")


def _hash(text: str) -> bytes:
    """The row key of a namespace or key (any length: a btree entry holds ~2.7 kB)."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def _text(data: Any) -> str:
    return bytes(data).decode("utf-8")


def _kv_row(row: Sequence[Any]) -> KVRow:
    return (_text(row[0]), _text(row[1]), bytes(row[2]), int(row[3]), int(row[4]))


def _range(prefix: str) -> dict[str, Any]:
    upper = prefix_upper_bound(prefix)
    return {"lo": _b(prefix), "hi": None if upper is None else _b(upper)}


class PostgresKeyValueStore:
    """Bytes by (namespace, key) of one agent; thread-safe."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def _args(self, **args: Any) -> dict[str, Any]:
        return {"agent": self._engine.agent_id, "now": now_ms(), **args}

    def get_many(self, namespace: str, keys: Sequence[str]) -> list[bytes | None]:
        check_namespace(namespace)
        wanted = checked_keys(keys)
        found = {row[1]: row[2] for row in self._rows(namespace, wanted)}
        return [found.get(key) for key in wanted]

    def rows(self, namespace: str, keys: Sequence[str]) -> list[KVRow]:
        check_namespace(namespace)
        return self._rows(namespace, checked_keys(keys))

    def _rows(self, namespace: str, wanted: list[str]) -> list[KVRow]:
        if not wanted:
            return []
        args = self._args(nsh=_hash(namespace), khs=[_hash(k) for k in wanted])
        with self._engine.read() as conn:
            return [_kv_row(row) for row in conn.execute(_ROWS, args).fetchall()]

    def row(self, namespace: str, key: str) -> KVRow | None:
        check_namespace(namespace)
        check_key(key, "key")
        with self._engine.read() as conn:
            args = self._args(nsh=_hash(namespace), kh=_hash(key))
            row = conn.execute(_ROW, args).fetchone()
        return None if row is None else _kv_row(row)

    def scan(self, prefix: str) -> list[KVRow]:
        check_text(prefix, "prefix")
        return self.under(prefix, None, 0)

    def under(self, prefix: str, limit: int | None, offset: int) -> list[KVRow]:
        """Live rows whose namespace starts with `prefix`, newest write first."""
        args = self._args(**_range(prefix), limit=limit, offset=offset)
        with self._engine.read() as conn:
            return [_kv_row(row) for row in conn.execute(_SCAN, args).fetchall()]

    def namespaces(self, prefix: str) -> list[str]:
        check_text(prefix, "prefix")
        with self._engine.read() as conn:
            rows = conn.execute(_NAMESPACES, self._args(**_range(prefix))).fetchall()
        return [_text(row[0]) for row in rows]

    def set_many(
        self, namespace: str, pairs_: Iterable[tuple[str, bytes]], *, ttl_ms: int | None = None
    ) -> None:
        check_namespace(namespace)
        check_ttl_ms(ttl_ms)
        args = self._args(ns=_b(namespace), nsh=_hash(namespace), ttl=ttl_ms)
        checked = [
            (check_key(key, f"pairs[{i}][0]"), bytes_value(value, i))
            for i, (key, value) in enumerate(pairs(pairs_))
        ]
        rows = [{**args, "key": _b(k), "kh": _hash(k), "value": v} for k, v in checked]
        if rows:
            with self._engine.write() as conn, conn.cursor() as cursor:
                cursor.executemany(_UPSERT, rows)

    def delete_many(self, namespace: str, keys: Sequence[str]) -> None:
        args = self._keyed_args(namespace, keys)
        if args is not None:
            with self._engine.write_one() as conn:
                conn.execute(_DELETE, args)

    def refresh(self, namespace: str, keys: Sequence[str]) -> None:
        args = self._keyed_args(namespace, keys)
        if args is not None:
            with self._engine.write_one() as conn:
                conn.execute(_REFRESH, args)

    def _keyed_args(self, namespace: str, keys: Sequence[str]) -> dict[str, Any] | None:
        """The arguments of a statement on some keys (None: no key, nothing to do)."""
        check_namespace(namespace)
        wanted = checked_keys(keys)
        if not wanted:
            return None
        return self._args(nsh=_hash(namespace), khs=[_hash(k) for k in wanted])

    def keys(self, namespace: str, prefix: str = "") -> Iterator[str]:
        check_namespace(namespace)
        check_text(prefix, "prefix")
        return self._keys(namespace, prefix)

    def _keys(self, namespace: str, prefix: str) -> Iterator[str]:
        after: bytes | None = None
        while True:
            args = self._args(nsh=_hash(namespace), **_range(prefix), after=after, limit=KEYS_PAGE)
            with self._engine.read() as conn:
                page = [bytes(row[0]) for row in conn.execute(_KEYS, args).fetchall()]
            yield from (_text(key) for key in page)
            if len(page) < KEYS_PAGE:
                return
            after = page[-1]

    def sweep(self) -> int:
        with self._engine.write_one() as conn:
            return conn.execute(_SWEEP, self._args()).rowcount


class PostgresKVSearch:
    """Filtered reads of one agent's kv items, and their vectors; thread-safe."""

    def __init__(self, store: PostgresKeyValueStore, engine: Engine) -> None:
        self._store = store
        self._engine = engine

    def put_vectors(self, namespace: str, key: str, rows: Sequence[tuple[str, int, bytes]]) -> None:
        if not rows:
            return
        base = {"agent": self._engine.agent_id, "nsh": _hash(namespace), "kh": _hash(key)}
        found = [
            {**base, "field": _b(field), "dims": dims, "vector": bytes(vector)}
            for field, dims, vector in rows
        ]
        with self._engine.write() as conn, conn.cursor() as cursor:
            cursor.executemany(_PUT_VECTOR, found)

    def page(self, prefix: str, conditions: str, limit: int, offset: int) -> list[KVRow]:
        check_text(prefix, "prefix")
        test = compile_conditions(conditions)
        if test is None:
            return self._store.under(prefix, None if limit < 0 else limit, offset)
        return page_of(self._store.under(prefix, None, 0), test, limit, offset)

    def page_equal(
        self, prefix: str, path: str, value: str | int | float, limit: int, offset: int
    ) -> list[KVRow]:
        check_text(prefix, "prefix")
        return page_of(
            self._store.under(prefix, None, 0), equality_test(path, value), limit, offset
        )

    def scan(
        self, prefix: str, conditions: str, dims: int
    ) -> tuple[list[KVRow], list[KVVectorRow]]:
        """One snapshot: the items and the vectors they hold agree."""
        check_text(prefix, "prefix")
        test = compile_conditions(conditions)
        args = {"agent": self._engine.agent_id, "now": now_ms(), **_range(prefix)}
        with self._engine.snapshot() as conn:
            rows = conn.execute(_SCAN, {**args, "limit": None, "offset": 0}).fetchall()
            stored = conn.execute(_VECTORS, {**args, "dims": dims}).fetchall()
        items = page_of([_kv_row(row) for row in rows], test, -1, 0)
        kept = {(row[0], row[1]) for row in items}
        vectors: list[KVVectorRow] = []
        for ns, key, vector in stored:
            found = (_text(ns), _text(key), bytes(vector))
            if (found[0], found[1]) in kept:
                vectors.append(found)
        return items, vectors
