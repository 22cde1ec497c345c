"""A key-value store in the agent's memory file, for the frameworks' stores.

Storage model (migrations/0007_kv.sql): `kv(namespace, key, value BLOB, created_at,
updated_at, expires_at)`, keyed (namespace, key). Namespaces and keys are any text UTF-8
can hold (NUL and any plane included; a lone surrogate is refused); values are bytes.
Expiry is data: a value written with `ttl_ms` expires that long after its write, or after
its last `refresh`; reads skip expired rows, `sweep()` deletes them.

Every call is one statement or one write transaction: `set_many` and `delete_many` are
all or nothing, `get_many` one snapshot (the keys go in as one JSON array, so the SQL text
stays constant whatever the batch size). `keys` pages through the namespace in key order,
a snapshot per page, so a large namespace never sits in memory at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ...rules.checks import check_text
from ...rules.encoding import dumps_json, now_ms
from ...rules.framework_rows import KVRow
from ...rules.kv_checks import (
    bytes_value as _bytes,
)
from ...rules.kv_checks import (
    check_key as _check_key,
)
from ...rules.kv_checks import (
    check_namespace as _check_namespace,
)
from ...rules.kv_checks import (
    check_ttl_ms,
    prefix_upper_bound,
)
from ...rules.kv_checks import (
    checked_keys as _checked_keys,
)
from ...rules.kv_checks import (
    pairs as _pairs,
)
from ..core.engine import Engine

__all__ = ["KVRow", "SQLiteKeyValueStore", "prefix_upper_bound"]


_GET = """
SELECT key, value FROM kv
WHERE namespace = ?1 AND key IN (SELECT value FROM json_each(?2))
  AND (expires_at IS NULL OR expires_at > ?3)
"""
_UPSERT = """
INSERT INTO kv(namespace, key, value, created_at, updated_at, ttl_ms, expires_at)
VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?4 + ?5)
ON CONFLICT(namespace, key) DO UPDATE SET
    value = excluded.value, updated_at = excluded.updated_at, ttl_ms = excluded.ttl_ms,
    expires_at = excluded.expires_at
"""
_REFRESH = """
UPDATE kv SET expires_at = ?3 + ttl_ms
WHERE namespace = ?1 AND key IN (SELECT value FROM json_each(?2))
  AND ttl_ms IS NOT NULL AND expires_at > ?3
"""
_DELETE = "DELETE FROM kv WHERE namespace = ?1 AND key IN (SELECT value FROM json_each(?2))"
# Key order is binary (UTF-8 bytes), which is code point order: a prefix's keys form one
# range of the primary key, [prefix, upper bound).
_KEYS_FROM = """
SELECT key FROM kv
WHERE namespace = ?1 AND key > ?2 AND (?3 IS NULL OR key < ?3)
  AND (expires_at IS NULL OR expires_at > ?4)
ORDER BY key LIMIT ?5
"""
_KEYS_FIRST = """
SELECT key FROM kv
WHERE namespace = ?1 AND key >= ?2 AND (?3 IS NULL OR key < ?3)
  AND (expires_at IS NULL OR expires_at > ?4)
ORDER BY key LIMIT ?5
"""
_SWEEP = "DELETE FROM kv WHERE expires_at <= ?1"
_ROWS = """
SELECT namespace, key, value, created_at, updated_at FROM kv
WHERE namespace = ?1 AND key IN (SELECT value FROM json_each(?2))
  AND (expires_at IS NULL OR expires_at > ?3)
"""
# One key: no json_each (a virtual table per call costs more than the lookup itself).
_ROW = """
SELECT namespace, key, value, created_at, updated_at FROM kv
WHERE namespace = ?1 AND key = ?2 AND (expires_at IS NULL OR expires_at > ?3)
"""
# A range of namespaces (a tagged prefix): one range of the primary key.
_SCAN = """
SELECT namespace, key, value, created_at, updated_at FROM kv
WHERE namespace >= ?1 AND (?2 IS NULL OR namespace < ?2)
  AND (expires_at IS NULL OR expires_at > ?3)
ORDER BY updated_at DESC, rowid DESC
"""
_NAMESPACES = """
SELECT DISTINCT namespace FROM kv
WHERE namespace >= ?1 AND (?2 IS NULL OR namespace < ?2)
  AND (expires_at IS NULL OR expires_at > ?3)
ORDER BY namespace
"""

#: Keys read per snapshot by `keys()`.
KEYS_PAGE = 1000


class SQLiteKeyValueStore:
    """Bytes by (namespace, key) in one database; thread-safe."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def get_many(self, namespace: str, keys: Sequence[str]) -> list[bytes | None]:
        """The values of `keys` in order (None for a missing or expired key)."""
        _check_namespace(namespace)
        wanted = _checked_keys(keys)
        if not wanted:
            return []
        with self._engine.read() as conn:
            rows = conn.execute(_GET, (namespace, dumps_json(wanted), now_ms())).fetchall()
        found: dict[Any, Any] = {row[0]: row[1] for row in rows}
        return [found.get(key) for key in wanted]

    def rows(self, namespace: str, keys: Sequence[str]) -> list[KVRow]:
        """The live rows of `keys` (in no particular order; missing keys have none)."""
        _check_namespace(namespace)
        wanted = _checked_keys(keys)
        if not wanted:
            return []
        with self._engine.read() as conn:
            return conn.execute(_ROWS, (namespace, dumps_json(wanted), now_ms())).fetchall()  # type: ignore[return-value]

    def row(self, namespace: str, key: str) -> KVRow | None:
        """The live row of one key (None: missing or expired); `rows` for one key, the
        hot path of a framework store's get."""
        _check_namespace(namespace)
        _check_key(key, "key")
        with self._engine.read() as conn:
            return conn.execute(_ROW, (namespace, key, now_ms())).fetchone()

    def scan(self, prefix: str) -> list[KVRow]:
        """Every live row whose namespace starts with `prefix`, newest write first."""
        check_text(prefix, "prefix")
        with self._engine.read() as conn:
            args = (prefix, prefix_upper_bound(prefix), now_ms())
            return conn.execute(_SCAN, args).fetchall()  # type: ignore[return-value]

    def namespaces(self, prefix: str) -> list[str]:
        """The namespaces starting with `prefix` that hold a live row, in order."""
        check_text(prefix, "prefix")
        with self._engine.read() as conn:
            args = (prefix, prefix_upper_bound(prefix), now_ms())
            return [str(row[0]) for row in conn.execute(_NAMESPACES, args)]

    def set_many(
        self,
        namespace: str,
        pairs: Iterable[tuple[str, bytes]],
        *,
        ttl_ms: int | None = None,
    ) -> None:
        """Store every pair in one transaction (a key given twice: the last value wins);
        with `ttl_ms`, they expire that many milliseconds from now (or from a refresh)."""
        _check_namespace(namespace)
        check_ttl_ms(ttl_ms)
        now = now_ms()
        rows = [
            (namespace, _check_key(key, f"pairs[{i}][0]"), _bytes(value, i), now, ttl_ms)
            for i, (key, value) in enumerate(_pairs(pairs))
        ]
        if not rows:
            return
        with self._engine.write() as conn:
            conn.executemany(_UPSERT, rows)

    def delete_many(self, namespace: str, keys: Sequence[str]) -> None:
        """Delete the keys (missing ones are ignored), in one transaction."""
        _check_namespace(namespace)
        wanted = _checked_keys(keys)
        if wanted:
            with self._engine.write() as conn:
                conn.execute(_DELETE, (namespace, dumps_json(wanted)))

    def refresh(self, namespace: str, keys: Sequence[str]) -> None:
        """Restart the expiry of live keys written with a ttl (LangGraph's refresh_ttl)."""
        _check_namespace(namespace)
        wanted = _checked_keys(keys)
        if wanted:
            with self._engine.write() as conn:
                conn.execute(_REFRESH, (namespace, dumps_json(wanted), now_ms()))

    def keys(self, namespace: str, prefix: str = "") -> Iterator[str]:
        """The namespace's live keys starting with `prefix`, in code point order."""
        _check_namespace(namespace)
        check_text(prefix, "prefix")
        return self._keys(namespace, prefix, prefix_upper_bound(prefix))

    def _keys(self, namespace: str, start: str, stop: str | None) -> Iterator[str]:
        after: str | None = None  # the last key of the previous page
        while True:
            with self._engine.read() as conn:
                if after is None:
                    args = (namespace, start, stop, now_ms(), KEYS_PAGE)
                    rows = conn.execute(_KEYS_FIRST, args).fetchall()
                else:
                    args = (namespace, after, stop, now_ms(), KEYS_PAGE)
                    rows = conn.execute(_KEYS_FROM, args).fetchall()
            page: list[str] = [str(row[0]) for row in rows]
            yield from page
            if len(page) < KEYS_PAGE:
                return
            after = page[-1]

    def sweep(self) -> int:
        """Delete every expired row (all namespaces); returns how many went."""
        with self._engine.write() as conn:
            conn.execute(_SWEEP, (now_ms(),))
            return int(conn.changes())
