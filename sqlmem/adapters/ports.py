"""What the framework adapters need of a database beyond its history: a key-value port
(TTL, namespace ranges, item vectors) for LangGraph's store and LangChain's byte store,
and a checkpoint port for LangGraph's savers.

Why named ports: the adapters are written once, against these, and every backend (the
SQLite file, PostgreSQL, the in-memory database) implements them, so a program moves from
one machine to a shared server by changing what it opens, not which classes it uses. A
database offers them as one capability, `FrameworkStorage` (`db.kv`, `db.kv_search`,
`db.checkpoints`), asked for with `has_framework_storage` rather than by probing
attributes.

This module imports no framework and no backend; the row types are the shared
`sqlmem.rules.framework_rows` (the backends build them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol, TypeGuard, runtime_checkable

from ..rules.framework_rows import CheckpointRow, KVRow, KVVectorRow, WriteRow

__all__ = [
    "CheckpointPort",
    "CheckpointRow",
    "FrameworkStorage",
    "KVRow",
    "KVSearchPort",
    "KVVectorRow",
    "KeyValuePort",
    "WriteRow",
    "has_framework_storage",
]


@runtime_checkable
class KeyValuePort(Protocol):
    """Bytes by (namespace, key), with expiry. Namespaces and keys are any text UTF-8 can
    hold, ordered by code point; `set_many`/`delete_many` are all or nothing; an item's
    vectors go when it is rewritten, deleted or swept."""

    def get_many(self, namespace: str, keys: Sequence[str]) -> list[bytes | None]: ...

    def rows(self, namespace: str, keys: Sequence[str]) -> list[KVRow]: ...

    def row(self, namespace: str, key: str) -> KVRow | None: ...

    def scan(self, prefix: str) -> list[KVRow]: ...

    def namespaces(self, prefix: str) -> list[str]: ...

    def set_many(
        self, namespace: str, pairs: Iterable[tuple[str, bytes]], *, ttl_ms: int | None = None
    ) -> None: ...

    def delete_many(self, namespace: str, keys: Sequence[str]) -> None: ...

    def refresh(self, namespace: str, keys: Sequence[str]) -> None: ...

    def keys(self, namespace: str, prefix: str = "") -> Iterator[str]: ...

    def sweep(self) -> int: ...


@runtime_checkable
class KVSearchPort(Protocol):
    """Filtered pages of the items under a namespace prefix, newest write first, and their
    vectors. `conditions` is the compiled filter of `sqlmem.adapters.langgraph_filter`
    (JSON text; "[]" for none), whose meaning `sqlmem.rules.kv_conditions` states."""

    def put_vectors(
        self, namespace: str, key: str, rows: Sequence[tuple[str, int, bytes]]
    ) -> None: ...

    def page(self, prefix: str, conditions: str, limit: int, offset: int) -> list[KVRow]: ...

    def page_equal(
        self, prefix: str, path: str, value: str | int | float, limit: int, offset: int
    ) -> list[KVRow]: ...

    def scan(
        self, prefix: str, conditions: str, dims: int
    ) -> tuple[list[KVRow], list[KVVectorRow]]: ...


@runtime_checkable
class CheckpointPort(Protocol):
    """LangGraph checkpoints and pending writes by (thread, namespace, checkpoint id), as
    the serde's bytes; every write one transaction; `search` newest first, lazily."""

    def put(
        self,
        key: tuple[str, str, str],
        parent_id: str | None,
        checkpoint: tuple[str, bytes],
        metadata: tuple[str, bytes],
        run_id: str | None,
    ) -> None: ...

    def put_writes(
        self,
        key: tuple[str, str, str],
        writes: Sequence[tuple[str, int, str, str, bytes]],
        task_path: str,
        *,
        replace: bool,
    ) -> None: ...

    def get(self, thread_id: str, ns: str, checkpoint_id: str | None) -> CheckpointRow | None: ...

    def search(
        self,
        thread_id: str | None,
        ns: str | None,
        checkpoint_id: str | None,
        before: str | None,
    ) -> Iterator[CheckpointRow]: ...

    def delete_thread(self, thread_id: str) -> None: ...

    def delete_for_runs(self, run_ids: Sequence[str]) -> None: ...

    def copy_thread(self, source: str, target: str) -> None: ...

    def prune(self, thread_ids: Sequence[str], strategy: str) -> None: ...


@runtime_checkable
class FrameworkStorage(Protocol):
    """A database that holds the frameworks' records next to its memory: every shipped
    database (SQLite, PostgreSQL, in-memory)."""

    @property
    def kv(self) -> KeyValuePort: ...

    @property
    def kv_search(self) -> KVSearchPort: ...

    @property
    def checkpoints(self) -> CheckpointPort: ...


#: Answers per class: a runtime-checkable isinstance looks up every member each call.
_OFFERS: dict[type, bool] = {}


def has_framework_storage(db: object) -> TypeGuard[FrameworkStorage]:
    """Whether `db` offers the key-value and checkpoint ports."""
    offered = _OFFERS.get(type(db))
    if offered is None:
        offered = _OFFERS[type(db)] = isinstance(db, FrameworkStorage)
    return offered
