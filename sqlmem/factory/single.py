"""One store outside any factory: `open_history_store`, `open_fact_store`.

A program that wants only history (or only facts) should not have to carry a MemoryDB
around to close it later. The store returned here is a subclass of the SQLite store that
holds its MemoryDB (so the database lives exactly as long as the store is referenced)
and can close it. It shares the engine with `store.db`, whose maintenance methods
(stats, check, vacuum, backup) stay reachable.
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import TypeVar

from ..config import StoreConfig
from ..sqlite.db import MemoryDB
from ..sqlite.stores.facts import SQLiteFactStore
from ..sqlite.stores.history import SQLiteHistoryStore

__all__ = ["OwnedFactStore", "OwnedHistoryStore", "open_fact_store", "open_history_store"]

_Owner = TypeVar("_Owner", bound="_OwnsDatabase")


class _OwnsDatabase:
    """Mixin: a store that owns the MemoryDB it was opened with."""

    _db: MemoryDB

    @property
    def db(self) -> MemoryDB:
        """The database behind this store, for maintenance (stats, vacuum, backup)."""
        return self._db

    @property
    def closed(self) -> bool:
        return self._db.closed

    def close(self) -> None:
        """Close the database; idempotent. Later calls raise StoreClosedError."""
        self._db.close()

    def __enter__(self: _Owner) -> _Owner:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class OwnedHistoryStore(_OwnsDatabase, SQLiteHistoryStore):
    """The `HistoryStore` of a database opened by `open_history_store`; close it when done."""

    def __init__(self, db: MemoryDB) -> None:
        super().__init__(db.engine)
        self._db = db


class OwnedFactStore(_OwnsDatabase, SQLiteFactStore):
    """The `FactStore` of a database opened by `open_fact_store`; close it when done."""

    def __init__(self, db: MemoryDB) -> None:
        super().__init__(db.engine)
        self._db = db


def open_history_store(
    path: str | os.PathLike[str], config: StoreConfig | None = None
) -> OwnedHistoryStore:
    """Open (creating and migrating) one memory file for its conversation history only.

    Use it as a context manager or call `close()`; facts stored in the same file are
    untouched and reachable through `store.db.facts`.
    """
    return OwnedHistoryStore(MemoryDB(path, config))


def open_fact_store(
    path: str | os.PathLike[str], config: StoreConfig | None = None
) -> OwnedFactStore:
    """Open (creating and migrating) one memory file for its long-term facts only.

    Use it as a context manager or call `close()`; the history in the same file is
    untouched and reachable through `store.db.history`.
    """
    return OwnedFactStore(MemoryDB(path, config))
