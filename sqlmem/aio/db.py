"""`await sqlmem.aio.open(target)`: an agent's memory for asyncio programs, on any backend.

The targets are `sqlmem.open`'s: a path (SQLite), ":memory:" (the twins) or a
PostgreSQL URL with `agent_id`. The async database holds the sync one (`.sync`) and a
private runner; every call is the sync call, awaited, off the event loop.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..config import StoreConfig
from ..errors import InvalidArgumentError, SqlmemError
from ..protocols import CheckResult, Database, Embedder, has_forgetting, is_closed
from ..rules.forget import ForgetReport
from .atomic import AsyncAtomic

if TYPE_CHECKING:
    from ..sqlite.db import MemoryDB
from .runner import Runner
from .stores import AsyncDocumentStore, AsyncFactStore, AsyncHistoryStore

__all__ = ["AsyncMemoryDB", "open"]


@runtime_checkable
class _Vacuums(Protocol):
    """Every shipped backend can `vacuum()`; a third-party `Database` may not."""

    def vacuum(self) -> None: ...


class AsyncMemoryDB:
    """`.history`, `.facts` and `.docs` with awaited methods over one `Database`.

    Built by `open()`, or over a database the program already has (`AsyncMemoryDB(db)`):
    the sync and async handles then share it. `aclose()` (or `async with`) lets every
    call already made finish, then closes the runner and, when this object opened the
    database, the database too.
    """

    def __init__(self, db: Database, *, workers: int | None = None, owns_db: bool = False):
        if not isinstance(db, Database):
            raise InvalidArgumentError(
                "AsyncMemoryDB wraps a sqlmem database (see sqlmem.aio.open), "
                f"not {type(db).__name__}"
            )
        if workers is not None and (
            isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
        ):
            raise InvalidArgumentError(f"workers must be an int >= 1, got {workers!r}")
        self._db = db
        self._owns_db = owns_db
        self._runner = Runner(workers, owner=db)
        self._blocks: set[Any] = set()  # atomic() threads, rolled back if still open at close
        self._blocks_lock = threading.Lock()
        self.history = AsyncHistoryStore(db.history, self._runner)
        self.facts = AsyncFactStore(db.facts, self._runner)
        self.docs = AsyncDocumentStore(db.docs, self._runner)

    @property
    def sync(self) -> Database:
        """The sync database behind this one."""
        return self._db

    @property
    def path(self) -> Path:
        """The SQLite file (only a SQLite database has one)."""
        return self._sqlite("path").path

    @property
    def config(self) -> StoreConfig:
        config = getattr(self._db, "config", None)  # every shipped backend has one
        return config if isinstance(config, StoreConfig) else StoreConfig()

    @property
    def closed(self) -> bool:
        return is_closed(self._db)

    def atomic(self) -> AsyncAtomic:
        """`async with adb.atomic():` every write awaited inside the block (through this
        database's stores, from this task and the tasks it starts there) commits together
        when the block ends, or not at all when it raises or is cancelled. The sync
        `atomic()` runs on one thread of the block's own; nested blocks are savepoints.
        Keep model and network calls out of it: it holds the write lock throughout."""
        return AsyncAtomic(self._db, self._db, self._track)

    def _track(self, worker: Any) -> None:
        with self._blocks_lock:
            self._blocks = {w for w in self._blocks if not w.finished}
            self._blocks.add(worker)

    # -- maintenance, awaited -----------------------------------------------------------

    async def stats(self) -> dict[str, Any]:
        return await self._runner.run(self._db.stats)

    async def check(self) -> CheckResult:
        return await self._runner.run(self._db.check)

    async def maintain(self) -> dict[str, Any]:
        return await self._runner.run(self._db.maintain)

    async def forget(self, source: str) -> ForgetReport:
        """`forget(source)` of the database (every backend of sqlmem's has it), awaited."""
        db = self._db
        if not has_forgetting(db):
            raise InvalidArgumentError(f"{type(db).__name__} cannot forget(source)")
        return await self._runner.run(functools.partial(db.forget, source))

    async def vacuum(self) -> None:
        db = self._db
        if not isinstance(db, _Vacuums):
            raise SqlmemError(f"{type(db).__name__} has no vacuum()")
        await self._runner.run(db.vacuum)

    async def checkpoint(self) -> tuple[int, int]:
        return await self._runner.run(self._sqlite("checkpoint()").checkpoint)

    async def backup(self, dest_path: str | os.PathLike[str]) -> Path:
        db = self._sqlite("backup()")
        return await self._runner.run(lambda: db.backup(dest_path))

    def _sqlite(self, what: str) -> MemoryDB:
        from ..sqlite.db import MemoryDB

        if not isinstance(self._db, MemoryDB):
            raise SqlmemError(f"{what} is a SQLite database's; this one is {self._db!r}")
        return self._db

    # -- life cycle ---------------------------------------------------------------------

    async def aclose(self) -> None:
        """Lets every call already made finish (none is dropped or cancelled), then
        closes; idempotent. Later calls raise `StoreClosedError`. An atomic() block still
        open is rolled back."""
        await asyncio.to_thread(self._close)

    def close(self) -> None:
        """`aclose()` for code without an event loop. Inside a running loop it would
        block the loop while calls drain, so there it raises: use `await adb.aclose()`."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._close()
            return
        raise SqlmemError(
            "AsyncMemoryDB.close() was called inside a running event loop: use "
            "`await adb.aclose()` (or `async with`)"
        )

    def _close(self) -> None:
        self._runner.shutdown()
        with self._blocks_lock:
            blocks, self._blocks = self._blocks, set()
        for worker in blocks:
            worker.abandon()
        if self._owns_db:
            self._db.close()

    async def __aenter__(self) -> AsyncMemoryDB:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<AsyncMemoryDB over {self._db!r}>"


async def open(
    target: str | os.PathLike[str],
    config: StoreConfig | None = None,
    *,
    embedder: Embedder | None = None,
    agent_id: str | None = None,
    workers: int | None = None,
) -> AsyncMemoryDB:
    """Open the memory at `target` (`sqlmem.open`'s targets: a path, ":memory:", or a
    PostgreSQL URL with `agent_id`) without blocking the event loop: the open and its
    migrations run on a thread.

    Cancelled while the thread works, the open still finishes (its migrations commit
    whole) and the database it made is closed on a thread of its own: nothing stays open
    behind a cancelled caller."""
    from ..opening import open as open_sync

    loop = asyncio.get_running_loop()
    opening: asyncio.Future[Database] = loop.run_in_executor(
        None,
        functools.partial(open_sync, target, config, embedder=embedder, agent_id=agent_id),
    )
    try:
        db = await asyncio.shield(opening)
    except asyncio.CancelledError:
        opening.add_done_callback(_close_unwanted)
        raise
    try:
        return AsyncMemoryDB(db, workers=workers, owns_db=True)
    except BaseException:
        db.close()
        raise


def _close_unwanted(opening: asyncio.Future[Database]) -> None:
    """Close the database a cancelled `open` made, off the loop (a plain thread: the
    loop's executor may be shutting down with the loop)."""
    if opening.cancelled() or opening.exception() is not None:
        return
    threading.Thread(target=opening.result().close, name="sqlmem-aio-close").start()
