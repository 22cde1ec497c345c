"""What every adapter holds: one database, and threads to run its calls off the event
loop.

An adapter takes `db_or_path`: any sqlmem database the program already has (a SQLite
`MemoryDB`, a PostgreSQL agent, the in-memory database, or an `AsyncMemoryDB` over any of
them; the adapter then shares it and never closes it), or a path (the adapter opens the
file and closes it with itself). The history adapters use only `db.history`; the
LangGraph store and savers and the byte store use the frameworks' ports
(`sqlmem.adapters.ports`), which every shipped database offers. The frameworks'
interfaces are async, so calls run on a private `sqlmem.aio` runner: the event loop never
waits for the write lock or the disk.

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
from ..config import DEFAULT_TOKENIZER, StoreConfig
from ..errors import InvalidArgumentError, StoreClosedError
from ..protocols import Database
from ..sqlite.db import MemoryDB, check_path
from .ports import FrameworkStorage, has_framework_storage

__all__ = ["Backend", "DbOrPath", "settle"]

R = TypeVar("R")

#: What an adapter's `db_or_path` takes.
DbOrPath = Union[Database, AsyncMemoryDB, str, "os.PathLike[str]"]


class Backend:
    """A database and a runner, closed together (the database only when we opened it)."""

    def __init__(self, db_or_path: DbOrPath, owner: str) -> None:
        given: object = db_or_path.sync if isinstance(db_or_path, AsyncMemoryDB) else db_or_path
        self._db: Database | None = None
        self._path: str | None = None
        if isinstance(given, (str, os.PathLike)):
            # Checked now (no disk access), opened on first use.
            self._path, self._owns_db = self._checked_target(given), True
        elif isinstance(given, Database):
            self._db, self._owns_db = given, False
        else:
            raise InvalidArgumentError(
                f"{owner}: db_or_path must be a sqlmem database (sqlmem.open(...): a "
                f"SQLite file, PostgreSQL or ':memory:'), an AsyncMemoryDB or a path, "
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
    def db(self) -> Database:
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
                self._db = self._open_target(self._path)
            return self._db

    def _checked_target(self, given: str | os.PathLike[str]) -> str:
        """The path these adapters open, checked without touching the disk."""
        return check_path(given)

    def _open_target(self, target: str) -> Database:
        """The database at a checked target, opened on first use."""
        return MemoryDB(target)

    @property
    def path(self) -> str:
        """The database file's path, without opening it (another backend: what the
        database calls itself)."""
        if self._db is None:
            return str(self._path)
        return str(self._db.path) if isinstance(self._db, MemoryDB) else repr(self._db)

    @property
    def storage(self) -> FrameworkStorage:
        """The database's key-value and checkpoint ports."""
        if not has_framework_storage(self.db):
            raise InvalidArgumentError(
                f"{self._owner}: {type(self.db).__name__} holds no key-value or checkpoint "
                "records; give it a database from sqlmem.open(...)"
            )
        return self.db

    @property
    def tokenizer(self) -> str:
        """The tokenizer of the database's full-text search (the file's own for SQLite)."""
        if isinstance(self.db, MemoryDB):
            return self.db.engine.tokenizer
        config = getattr(self.db, "config", None)  # every shipped backend has one
        return config.tokenizer if isinstance(config, StoreConfig) else DEFAULT_TOKENIZER

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

    async def aclose(self) -> None:
        """`close` on a worker thread: waiting for the runner and closing a file are
        blocking work the event loop must not do."""
        await asyncio.to_thread(self.close)


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
