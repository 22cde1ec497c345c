"""`sqlmem.inmemory.open()`: a `MemoryDB`-shaped object over the in-memory twins.

Why: the context helpers (consolidation, the context window, the memory pack) are written
against a database's stores and its `atomic()`; tests and file-less programs run them over
the twins through this object, with the same all-or-nothing promise. The twins share one
re-entrant lock, so `atomic()` holding it keeps every other thread's reads and writes out
until the block ends; on an exception each store is put back as it was when the block
began (a snapshot per block, so nested blocks are undone alone, like savepoints).

A snapshot copies the stores' containers, not the records inside: each twin replaces a
stored record on change and never mutates one in place. It costs a pass over the stored
items per block, fine for tests and small programs (the twins' purpose).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Protocol

from ..config import StoreConfig
from ..errors import InvalidArgumentError
from ..protocols import Embedder
from ..rules.forget import ForgetReport
from . import maintenance
from .checkpoints import InMemoryCheckpointStore
from .docs import InMemoryDocumentStore
from .facts import InMemoryFactStore
from .history import InMemoryHistoryStore
from .kv import InMemoryKeyValueStore, InMemoryKVSearch
from .maintenance import CheckReport
from .run_leases import InMemoryRunLeases

__all__ = ["InMemoryDB", "open"]


class _Twin(Protocol):
    """What `atomic()` needs of a twin: its lock can be shared, its state saved and put
    back."""

    _lock: threading.RLock

    def _snapshot(self) -> object: ...

    def _restore(self, state: object) -> None: ...


class InMemoryDB:
    """`.history`, `.facts` and `.docs` twins (no file) with `atomic()`; thread-safe."""

    def __init__(
        self, config: StoreConfig | None = None, *, embedder: Embedder | None = None
    ) -> None:
        if config is not None and not isinstance(config, StoreConfig):
            raise InvalidArgumentError("config must be a StoreConfig")
        self.config = config or StoreConfig()
        self.history = InMemoryHistoryStore(self.config, embedder=embedder)
        self.facts = InMemoryFactStore(self.config, embedder=embedder)
        self.docs = InMemoryDocumentStore(self.config)
        self.run_leases = InMemoryRunLeases()
        #: The frameworks' records (`sqlmem.adapters.ports`): key-value items, their
        #: vectors, LangGraph checkpoints; undone with the rest by `atomic()`.
        self.kv = InMemoryKeyValueStore()
        self.kv_search = InMemoryKVSearch(self.kv)
        self.checkpoints = InMemoryCheckpointStore()
        self._lock = threading.RLock()
        self._twins: tuple[_Twin, ...] = (
            self.history,
            self.facts,
            self.docs,
            self.kv.state,
            self.checkpoints,
        )
        for twin in self._twins:  # one lock: atomic() keeps every other thread out
            twin._lock = self._lock
        #: This thread's open block: work for after it ends (`after`, None outside one).
        self._block = threading.local()
        self.facts._open_block = lambda: getattr(self._block, "after", None)
        self.history._open_block = self.facts._open_block
        self._closed = False

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """The writes this thread makes through the stores inside the block all stay, or,
        when the block raises, none do (the exception propagates). Nesting is allowed;
        other threads wait until the outermost block ends."""
        outermost = getattr(self._block, "after", None) is None
        if outermost:
            self._block.after = []
        try:
            with self._lock:
                saved = [(twin, twin._snapshot()) for twin in self._twins]
                try:
                    yield
                except BaseException:
                    for twin, state in saved:
                        twin._restore(state)
                    raise
            after: list[Callable[[], None]] = self._block.after if outermost else []
        finally:
            if outermost:
                self._block.after = None
        for work in after:  # the block ended and let go of the lock (vectors, see facts.py)
            work()

    # -- maintenance (sqlmem.inmemory.maintenance) ------------------------------------------

    def stats(self) -> dict[str, Any]:
        """The counts the other backends report (`path` is ":memory:")."""
        return maintenance.stats(self)

    def check(self) -> CheckReport:
        """What the twins keep redundant, checked against itself; `ok` when healthy."""
        return maintenance.check(self)

    def maintain(self) -> dict[str, Any]:
        """Delete the expired facts; returns `{"expired_facts": n}`."""
        return maintenance.maintain(self)

    def forget(self, source: str) -> ForgetReport:
        """As `MemoryDB.forget`: the source and every fact derived only from it, all or
        nothing (`sqlmem.inmemory.forget`)."""
        from .forget import forget

        return forget(self, source)

    def vacuum(self) -> None:
        """Deletes expired facts (what `MemoryDB.vacuum` does first; a twin keeps no bytes
        of deleted data to rewrite)."""
        self.facts.expire()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Marks the object closed; the twins hold no resources, their data stays."""
        self._closed = True

    def __enter__(self) -> InMemoryDB:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<InMemoryDB {self.history!r} {self.facts!r} {self.docs!r}>"


def open(config: StoreConfig | None = None, *, embedder: Embedder | None = None) -> InMemoryDB:
    """A new, empty in-memory database (history, facts and documents twins with
    `atomic()`)."""
    return InMemoryDB(config, embedder=embedder)
