"""`await sqlmem.aio.open(path)`: an agent's memory file for asyncio programs (SPEC 18)."""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from ..config import StoreConfig
from ..errors import InvalidArgumentError
from ..protocols import Embedder
from ..sqlite.db import CheckReport, MemoryDB
from .runner import Runner
from .stores import AsyncDocumentStore, AsyncFactStore, AsyncHistoryStore

__all__ = ["AsyncMemoryDB", "open"]


class AsyncMemoryDB:
    """`.history`, `.facts` and `.docs` with awaited methods over one `MemoryDB`.

    Built by `open()`, or over a `MemoryDB` the program already has (`AsyncMemoryDB(db)`):
    the sync and async handles then share the engine. `aclose()` (or `async with`) closes
    the pool and, when this object opened the database, the database too.
    """

    def __init__(self, db: MemoryDB, *, workers: int | None = None, owns_db: bool = False):
        if not isinstance(db, MemoryDB):
            raise InvalidArgumentError("AsyncMemoryDB wraps a MemoryDB (see sqlmem.aio.open)")
        if workers is not None and (
            isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
        ):
            raise InvalidArgumentError(f"workers must be an int >= 1, got {workers!r}")
        self._db = db
        self._owns_db = owns_db
        self._runner = Runner(workers)
        self.history = AsyncHistoryStore(db.history, self._runner)
        self.facts = AsyncFactStore(db.facts, self._runner)
        self.docs = AsyncDocumentStore(db.docs, self._runner)

    @property
    def sync(self) -> MemoryDB:
        """The sync database behind this one."""
        return self._db

    @property
    def path(self) -> Path:
        return self._db.path

    @property
    def config(self) -> StoreConfig:
        return self._db.config

    @property
    def closed(self) -> bool:
        return self._db.closed

    # -- maintenance, awaited -----------------------------------------------------------

    async def stats(self) -> dict[str, Any]:
        return await self._runner.run(self._db.stats)

    async def check(self) -> CheckReport:
        return await self._runner.run(self._db.check)

    async def checkpoint(self) -> tuple[int, int]:
        return await self._runner.run(self._db.checkpoint)

    async def vacuum(self) -> None:
        await self._runner.run(self._db.vacuum)

    async def maintain(self) -> dict[str, Any]:
        return await self._runner.run(self._db.maintain)

    async def backup(self, dest_path: str | os.PathLike[str]) -> Path:
        return await self._runner.run(lambda: self._db.backup(dest_path))

    # -- life cycle ---------------------------------------------------------------------

    async def aclose(self) -> None:
        """Waits for calls in flight, then closes; idempotent. Later calls raise
        `StoreClosedError`."""
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        self._runner.shutdown()
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
        return f"<AsyncMemoryDB {str(self._db.path)!r}>"


async def open(
    path: str | os.PathLike[str],
    config: StoreConfig | None = None,
    *,
    embedder: Embedder | None = None,
    workers: int | None = None,
) -> AsyncMemoryDB:
    """Open (creating and migrating if needed) the database at `path` without blocking the
    event loop: the open and its migrations run on a thread.

    Cancelled while the thread works, the open still finishes (its migrations commit
    whole) and the database it made is closed on a thread of its own: nothing stays open
    behind a cancelled caller."""
    loop = asyncio.get_running_loop()
    opening = loop.run_in_executor(
        None, functools.partial(MemoryDB, path, config, embedder=embedder)
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


def _close_unwanted(opening: asyncio.Future[MemoryDB]) -> None:
    """Close the database a cancelled `open` made, off the loop (a plain thread: the
    loop's executor may be shutting down with the loop)."""
    if opening.cancelled() or opening.exception() is not None:
        return
    threading.Thread(target=opening.result().close, name="sqlmem-aio-close").start()
