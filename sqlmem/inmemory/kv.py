"""The frameworks' key-value items in the in-memory database: the key-value and search
ports of `sqlmem.adapters.ports` over dicts, with the SQLite file's semantics (expiry as
data, code point order, an item's vectors gone with its value, filters as
`sqlmem.rules.kv_conditions` states them). Both ports share one state, so a search sees
the items and vectors a write left together."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple, cast

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
)
from ..rules.kv_conditions import compile_conditions, equality_test, page_of

__all__ = ["InMemoryKVSearch", "InMemoryKeyValueStore"]

Key = tuple[str, str]


class _Item(NamedTuple):
    value: bytes
    created_at: int
    updated_at: int
    ttl_ms: int | None
    expires_at: int | None
    order: int  # write order, the tie-break of equal updated_at (SQLite's rowid)


class _State:
    """Items and their vectors; `_lock` is the database's when it runs `atomic()`."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.items: dict[Key, _Item] = {}
        self.vectors: dict[Key, dict[str, tuple[int, bytes]]] = {}
        self.counter = itertools.count()

    def _snapshot(self) -> object:
        return dict(self.items), {key: dict(v) for key, v in self.vectors.items()}

    def _restore(self, state: object) -> None:
        self.items, self.vectors = cast(
            tuple[dict[Key, _Item], dict[Key, dict[str, tuple[int, bytes]]]], state
        )

    def live(self, key: Key, now: int) -> _Item | None:
        item = self.items.get(key)
        if item is None or (item.expires_at is not None and item.expires_at <= now):
            return None
        return item

    def under(self, prefix: str) -> list[KVRow]:
        """Live rows whose namespace starts with `prefix`, newest write first."""
        now = now_ms()
        found = [
            (item.updated_at, item.order, (ns, key, item.value, item.created_at, item.updated_at))
            for (ns, key), item in self.items.items()
            if ns.startswith(prefix) and (item.expires_at is None or item.expires_at > now)
        ]
        found.sort(key=lambda entry: (entry[0], entry[1]), reverse=True)
        return [row for _, _, row in found]

    def forget(self, key: Key) -> None:
        self.items.pop(key, None)
        self.vectors.pop(key, None)


class InMemoryKeyValueStore:
    """Bytes by (namespace, key); thread-safe."""

    def __init__(self) -> None:
        self.state = _State()

    def get_many(self, namespace: str, keys: Sequence[str]) -> list[bytes | None]:
        check_namespace(namespace)
        wanted = checked_keys(keys)
        with self.state._lock:
            now = now_ms()
            found = [self.state.live((namespace, key), now) for key in wanted]
        return [None if item is None else item.value for item in found]

    def rows(self, namespace: str, keys: Sequence[str]) -> list[KVRow]:
        check_namespace(namespace)
        wanted = dict.fromkeys(checked_keys(keys))
        return [row for row in (self._row(namespace, key) for key in wanted) if row is not None]

    def row(self, namespace: str, key: str) -> KVRow | None:
        check_namespace(namespace)
        check_key(key, "key")
        return self._row(namespace, key)

    def _row(self, namespace: str, key: str) -> KVRow | None:
        with self.state._lock:
            item = self.state.live((namespace, key), now_ms())
        if item is None:
            return None
        return (namespace, key, item.value, item.created_at, item.updated_at)

    def scan(self, prefix: str) -> list[KVRow]:
        check_text(prefix, "prefix")
        with self.state._lock:
            return self.state.under(prefix)

    def namespaces(self, prefix: str) -> list[str]:
        check_text(prefix, "prefix")
        with self.state._lock:
            return sorted({row[0] for row in self.state.under(prefix)})

    def set_many(
        self, namespace: str, pairs_: Iterable[tuple[str, bytes]], *, ttl_ms: int | None = None
    ) -> None:
        check_namespace(namespace)
        check_ttl_ms(ttl_ms)
        checked = [
            (check_key(key, f"pairs[{i}][0]"), bytes_value(value, i))
            for i, (key, value) in enumerate(pairs(pairs_))
        ]
        with self.state._lock:
            now = now_ms()
            for key, value in checked:
                old = self.state.items.get((namespace, key))
                if old is None or old.value != value:
                    self.state.vectors.pop((namespace, key), None)
                created = now if old is None else old.created_at
                expires = None if ttl_ms is None else now + ttl_ms
                order = next(self.state.counter)
                self.state.items[namespace, key] = _Item(
                    value, created, now, ttl_ms, expires, order
                )

    def delete_many(self, namespace: str, keys: Sequence[str]) -> None:
        check_namespace(namespace)
        wanted = checked_keys(keys)
        with self.state._lock:
            for key in wanted:
                self.state.forget((namespace, key))

    def refresh(self, namespace: str, keys: Sequence[str]) -> None:
        check_namespace(namespace)
        wanted = checked_keys(keys)
        with self.state._lock:
            now = now_ms()
            for key in wanted:
                item = self.state.live((namespace, key), now)
                if item is not None and item.ttl_ms is not None:
                    self.state.items[namespace, key] = item._replace(expires_at=now + item.ttl_ms)

    def keys(self, namespace: str, prefix: str = "") -> Iterator[str]:
        check_namespace(namespace)
        check_text(prefix, "prefix")
        with self.state._lock:
            now = now_ms()
            found = sorted(
                key
                for (ns, key), item in self.state.items.items()
                if ns == namespace
                and key.startswith(prefix)
                and (item.expires_at is None or item.expires_at > now)
            )
        return iter(found)

    def sweep(self) -> int:
        with self.state._lock:
            now = now_ms()
            gone = [
                key
                for key, item in self.state.items.items()
                if item.expires_at is not None and item.expires_at <= now
            ]
            for key in gone:
                self.state.forget(key)
        return len(gone)


class InMemoryKVSearch:
    """Filtered reads of the items of an `InMemoryKeyValueStore`, and their vectors."""

    def __init__(self, store: InMemoryKeyValueStore) -> None:
        self._state = store.state

    def put_vectors(self, namespace: str, key: str, rows: Sequence[tuple[str, int, bytes]]) -> None:
        if rows:
            with self._state._lock:
                held = self._state.vectors.setdefault((namespace, key), {})
                for field, dims, vector in rows:
                    held[field] = (dims, bytes(vector))

    def page(self, prefix: str, conditions: str, limit: int, offset: int) -> list[KVRow]:
        check_text(prefix, "prefix")
        test = compile_conditions(conditions)
        with self._state._lock:
            rows = self._state.under(prefix)
        return page_of(rows, test, limit, offset)

    def page_equal(
        self, prefix: str, path: str, value: str | int | float, limit: int, offset: int
    ) -> list[KVRow]:
        check_text(prefix, "prefix")
        with self._state._lock:
            rows = self._state.under(prefix)
        return page_of(rows, equality_test(path, value), limit, offset)

    def scan(
        self, prefix: str, conditions: str, dims: int
    ) -> tuple[list[KVRow], list[KVVectorRow]]:
        check_text(prefix, "prefix")
        test = compile_conditions(conditions)
        with self._state._lock:
            items = page_of(self._state.under(prefix), test, -1, 0)
            vectors = [
                (ns, key, vector)
                for ns, key, *_ in items
                for d, vector in self._state.vectors.get((ns, key), {}).values()
                if d == dims
            ]
        return items, vectors
