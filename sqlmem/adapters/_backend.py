"""What every adapter holds: one `MemoryDB`, and threads to run its calls off the event
loop.

An adapter takes `db_or_path`: a `MemoryDB` or `AsyncMemoryDB` the program already has
(the adapter then shares its engine and never closes it), or a path (the adapter opens the
file and closes it with itself). The frameworks' interfaces are async, so calls run on a
private `sqlmem.aio` runner: the event loop never waits for the write lock or the disk.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, Union

from ..aio.db import AsyncMemoryDB
from ..aio.runner import Runner
from ..errors import InvalidArgumentError
from ..sqlite.db import MemoryDB

__all__ = ["Backend", "DbOrPath", "settle"]

R = TypeVar("R")

#: What an adapter's `db_or_path` takes.
DbOrPath = Union[MemoryDB, AsyncMemoryDB, str, "os.PathLike[str]"]


class Backend:
    """A database and a runner, closed together (the database only when we opened it)."""

    def __init__(self, db_or_path: DbOrPath, owner: str) -> None:
        given: object = db_or_path.sync if isinstance(db_or_path, AsyncMemoryDB) else db_or_path
        if isinstance(given, MemoryDB):
            self.db, self._owns_db = given, False
        elif isinstance(given, (str, os.PathLike)):
            self.db, self._owns_db = MemoryDB(given), True
        else:
            raise InvalidArgumentError(
                f"{owner}: db_or_path must be a MemoryDB, an AsyncMemoryDB or a path, "
                f"not {type(given).__name__}"
            )
        # One or two threads in practice: they start on demand (up to the runner's cap).
        self._runner = Runner(name=owner, owner=self.db)

    async def run(self, call: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
        """`call(*args, **kwargs)` on a runner thread, awaited."""
        return await self._runner.run(functools.partial(call, *args, **kwargs))

    async def write(self, call: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
        """`run` for a write whose outcome the caller must know: see `settle`."""
        run = self._runner.run(functools.partial(call, *args, **kwargs), write=True)
        return await settle(run)

    def close(self) -> None:
        """Waits for calls in flight; idempotent."""
        self._runner.shutdown()
        if self._owns_db:
            self.db.close()


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
