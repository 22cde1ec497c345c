"""Running the sync stores' calls off the event loop.

Why threads: every store call is a short piece of blocking work (a lock, a disk read, an
fsync at commit) that SQLite can only do synchronously. A private pool of threads runs
them, so the event loop never waits for a write lock or the disk, and the engine stays the
one the sync API uses (its single writer, its reader pool, its busy timeout): sync and
async handles share one file, and one set of guarantees.

Two pools: writes wait for the file's one writer (for as long as another thread or process
holds it, up to the busy timeout), so they run on a few threads of their own; reads and
slow work (compaction, embedding) run on the others. However many writes queue behind a
held write lock, reads keep answering, as they do in WAL for sync callers.

Cancellation: cancelling the awaiting task cancels the call if it has not started (it never
runs); a call already running finishes on its thread, whole (its transaction commits or
rolls back as one), and its result is dropped. So no cancellation leaves half a write, and
the store stays usable.

Closing: `shutdown()` refuses new calls (`StoreClosedError`) and then runs every call it
had already accepted to its end, so a task that nobody cancelled never sees a
`CancelledError` because the database closed, and every awaited write it reports done is
written.

Inside `async with adb.atomic()` a call goes to the block's own thread instead (see
`atomic`): the caller's context says which block it is in.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from ..errors import StoreClosedError
from .atomic import current_block

__all__ = ["Runner", "off_loop"]

P = ParamSpec("P")
R = TypeVar("R")


def default_workers() -> int:
    """Threads per database: reads run side by side on the reader pool, writes queue for
    the one writer anyway, so a few more than the cores is enough."""
    return min(16, (os.cpu_count() or 2) + 4)


#: Threads for writes (at most): the engine runs one write at a time, so more would only
#: wait; two keep the next write ready when one commits.
WRITE_WORKERS = 2


class Runner:
    """A database's private thread pools (not the loop's default executor, which the
    application may need for its own blocking work): `workers` threads for reads and slow
    work, up to `WRITE_WORKERS` for writes."""

    def __init__(
        self,
        workers: int | None = None,
        *,
        name: str = "the async database",
        owner: object = None,
    ) -> None:
        self._name = name  # in the StoreClosedError message: "<name> is closed"
        #: The sync database these calls go to: calls made inside one of its atomic()
        #: blocks run on the block's thread, whichever runner they come through.
        self.owner = self if owner is None else owner
        workers = workers or default_workers()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sqlmem-aio")
        self._writes = ThreadPoolExecutor(
            max_workers=min(workers, WRITE_WORKERS), thread_name_prefix="sqlmem-aio-write"
        )
        self._closed = False

    async def run(self, call: Callable[[], R], *, write: bool = False) -> R:
        """`call()` on a thread, awaited; `write`: it takes the write lock (its own pool)."""
        if self._closed:
            raise StoreClosedError(f"{self._name} is closed")
        block = current_block(self.owner)
        if block is not None:
            return await block.run(call)
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()  # the caller's context vars (logging, tracing)
        pool = self._writes if write else self._pool
        try:
            return await loop.run_in_executor(pool, context.run, call)
        except RuntimeError as exc:  # the pool shut down between the check and the submit
            if self._closed:
                raise StoreClosedError(f"{self._name} is closed") from exc
            raise

    def shutdown(self) -> None:
        """No new calls (they raise `StoreClosedError`); every call already accepted, queued
        or running, runs to its end first (the caller waits for them): a closing database
        never turns a queued call into a `CancelledError` of a task nobody cancelled."""
        self._closed = True
        self._writes.shutdown(wait=True, cancel_futures=False)
        self._pool.shutdown(wait=True, cancel_futures=False)


class _Proxy(Protocol):
    _store: Any
    _runner: Runner


def off_loop(
    method: Callable[Concatenate[Any, P], R], *, write: bool = False
) -> Callable[Concatenate[_Proxy, P], Coroutine[Any, Any, R]]:
    """The async twin of a store method: same name, arguments and result, awaited.
    `write`: the method takes the write lock (it runs on the runner's write threads).

    Typed from the protocol's method, so mypy checks async calls like sync ones.
    """
    name = method.__name__

    async def call(self: _Proxy, /, *args: P.args, **kwargs: P.kwargs) -> R:
        bound = getattr(self._store, name)
        return await self._runner.run(functools.partial(bound, *args, **kwargs), write=write)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = method.__doc__
    return call
