"""What every adapter holds: one `MemoryDB`, and threads to run its calls off the event
loop.

An adapter takes `db_or_path`: a `MemoryDB` or `AsyncMemoryDB` the program already has
(the adapter then shares its engine and never closes it), or a path (the adapter opens the
file and closes it with itself). The frameworks' interfaces are async, so calls run on a
private `sqlmem.aio` runner: the event loop never waits for the write lock or the disk.

A path is opened on first use, not in the constructor: frameworks build these objects
inside their event loop (LangChain's `RunnableWithMessageHistory` calls the session
factory there), and opening a file stats, reads and may migrate it. An async call opens
it on the runner's thread (`run_db`/`write_db`), a sync call on the caller's.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, Union

from ..aio.db import AsyncMemoryDB
from ..aio.runner import Runner
from ..errors import InvalidArgumentError, StoreClosedError
from ..sqlite.db import MemoryDB, check_path

__all__ = ["Backend", "DbOrPath", "settle"]

R = TypeVar("R")

#: What an adapter's `db_or_path` takes.
DbOrPath = Union[MemoryDB, AsyncMemoryDB, str, "os.PathLike[str]"]


class Backend:
    """A database and a runner, closed together (the database only when we opened it)."""

    def __init__(self, db_or_path: DbOrPath, owner: str) -> None:
        given: object = db_or_path.sync if isinstance(db_or_path, AsyncMemoryDB) else db_or_path
        self._db: MemoryDB | None = None
        self._path: str | None = None
        if isinstance(given, MemoryDB):
            self._db, self._owns_db = given, False
        elif isinstance(given, (str, os.PathLike)):
            # Checked now (no disk access), opened on first use.
            self._path, self._owns_db = check_path(given), True
        else:
            raise InvalidArgumentError(
                f"{owner}: db_or_path must be a MemoryDB, an AsyncMemoryDB or a path, "
                f"not {type(given).__name__}"
            )
        self._owner = owner
        self._closed = False
        self._opening = threading.Lock()
        # One or two threads in practice: they start on demand (up to the runner's cap).
        # Calls inside an atomic() block of a database the program gave us run on the
        # block's thread; a database we open ourselves has no such blocks.
        self._runner = Runner(name=owner, owner=self._db)

    @property
    def db(self) -> MemoryDB:
        """The database, opened on first use when a path was given (on the calling
        thread: async methods reach it through `run_db`/`write_db`)."""
        db = self._db
        if db is not None:
            return db
        with self._opening:
            if self._closed:
                raise StoreClosedError(f"{self._owner} is closed")
            if self._db is None:
                assert self._path is not None
                self._db = MemoryDB(self._path)
            return self._db

    @property
    def path(self) -> str:
        """The database file's path, without opening it."""
        return str(self._db.path if self._db is not None else self._path)

    async def run(self, call: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
        """`call(*args, **kwargs)` on a runner thread, awaited."""
        return await self._runner.run(functools.partial(call, *args, **kwargs))

    async def write(self, call: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
        """`run` for a write whose outcome the caller must know: see `settle`."""
        run = self._runner.run(functools.partial(call, *args, **kwargs), write=True)
        return await settle(run)

    async def run_db(self, call: Callable[..., R], /, *args: Any) -> R:
        """`call(db, *args)` on a runner thread: the database is opened there if needed."""
        return await self.run(self._with_db, call, *args)

    async def write_db(self, call: Callable[..., R], /, *args: Any) -> R:
        """`run_db` for a write whose outcome the caller must know: see `settle`."""
        return await self.write(self._with_db, call, *args)

    def _with_db(self, call: Callable[..., R], *args: Any) -> R:
        return call(self.db, *args)

    def close(self) -> None:
        """Waits for calls in flight; idempotent."""
        self._runner.shutdown()
        with self._opening:
            self._closed = True
        if self._owns_db and self._db is not None:
            self._db.close()


async def settle(write: Awaitable[R]) -> R:
    """Await a write to its end even when the caller is cancelled meanwhile, then pass the
    cancellation on.

    Why: cancelling a call already running on a thread would hand the caller its
    `CancelledError` while the write may still commit, so a retry (the frameworks retry
    turns) could store it twice, and a read right after could miss it. Here the write
    runs whole (the runner's guarantee) and the caller hears of the cancellation only
    once the outcome is in the file.
    """
    task = asyncio.ensure_future(write)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait((task,))
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved, so asyncio does not log it as never retrieved
        raise cancelled
    return task.result()
