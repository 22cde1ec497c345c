"""What the adapters written against the `Database` protocol hold: any database (SQLite,
in memory, PostgreSQL) and a private runner that keeps its calls off the event loop.

`db_or_path` takes a `Database` the program already has (the adapter shares it and never
closes it), its async wrapper, or a target for `sqlmem.open` (the adapter opens it and
closes it with itself).

A target is opened on first use, not in the constructor: async applications build these
services inside their event loop, and opening a file stats, reads and may migrate it (a
server, connects). An async call opens it on the runner's thread.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar, Union

from ..aio.db import AsyncMemoryDB
from ..aio.runner import Runner
from ..errors import InvalidArgumentError, StoreClosedError
from ..protocols import Database
from ._backend import settle

__all__ = ["AnyBackend", "AnyDbOrPath"]

R = TypeVar("R")

#: What these adapters' `db_or_path` takes: a database, its async wrapper, or a target of
#: `sqlmem.open` (a file path or ":memory:").
AnyDbOrPath = Union[Database, AsyncMemoryDB, str, "os.PathLike[str]"]


def _checked_target(given: str | os.PathLike[str]) -> str:
    """A target of `sqlmem.open` as text; a file path that can never be a database is
    refused now, without touching the disk (it is opened on first use)."""
    from ..opening import MEMORY_TARGET, is_postgres_url
    from ..sqlite.db import check_path

    target = os.fspath(given)
    if isinstance(target, str) and (target == MEMORY_TARGET or is_postgres_url(target)):
        return target
    return check_path(target)


class AnyBackend:
    """A database and a runner, closed together (the database only when we opened it)."""

    def __init__(self, db_or_path: AnyDbOrPath, owner: str) -> None:
        given: object = getattr(db_or_path, "sync", db_or_path)
        self._db: Database | None = None
        self._target: str | None = None
        if isinstance(given, (str, os.PathLike)):
            self._target, self._owns_db = _checked_target(given), True
        elif isinstance(given, Database):
            self._db, self._owns_db = given, False
        else:
            raise InvalidArgumentError(
                f"{owner}: db_or_path must be a sqlmem database, its async wrapper or a "
                f"path, not {type(given).__name__}"
            )
        self._owner = owner
        self._closed = False
        self._opening = threading.Lock()
        # Calls inside an atomic() block of a database the program gave us run on the
        # block's thread; a database we open ourselves has no such blocks.
        self._runner = Runner(name=owner, owner=self._db)

    @property
    def db(self) -> Database:
        """The database, opened on first use when a target was given (on the calling
        thread: the async methods call it from the runner's)."""
        db = self._db
        if db is not None:
            return db
        with self._opening:
            if self._closed:
                raise StoreClosedError(f"{self._owner} is closed")
            if self._db is None:
                from ..opening import open as open_target

                assert self._target is not None
                self._db = open_target(self._target)
            return self._db

    async def run(self, call: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
        """`call(*args, **kwargs)` on a runner thread, awaited."""
        return await self._runner.run(functools.partial(call, *args, **kwargs))

    async def write(self, call: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
        """A write awaited to its end even when the caller is cancelled meanwhile."""
        run = self._runner.run(functools.partial(call, *args, **kwargs), write=True)
        return await settle(run)

    def close(self) -> None:
        """Waits for calls in flight; idempotent. Blocks: async callers use `aclose`."""
        self._runner.shutdown()
        with self._opening:
            self._closed = True
        if self._owns_db and self._db is not None:
            self._db.close()

    async def aclose(self) -> None:
        """`close` on a worker thread: waiting for the runner and closing a file are
        blocking work the event loop must not do."""
        await asyncio.to_thread(self.close)
