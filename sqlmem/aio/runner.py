"""Running the sync stores' calls off the event loop.

Why threads: every store call is a short piece of blocking work (a lock, a disk read, an
fsync at commit) that SQLite can only do synchronously. A private pool of threads runs
them, so the event loop never waits for a write lock or the disk, and the engine stays the
one the sync API uses (its single writer, its reader pool, its busy timeout): sync and
async handles share one file, and one set of guarantees.

Cancellation: cancelling the awaiting task cancels the call if it has not started (it never
runs); a call already running finishes on its thread, whole (its transaction commits or
rolls back as one), and its result is dropped. So no cancellation leaves half a write, and
the store stays usable.
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

__all__ = ["Runner", "off_loop"]

P = ParamSpec("P")
R = TypeVar("R")


def default_workers() -> int:
    """Threads per database: reads run side by side on the reader pool, writes queue for
    the one writer anyway, so a few more than the cores is enough."""
    return min(16, (os.cpu_count() or 2) + 4)


class Runner:
    """A database's private thread pool (not the loop's default executor, which the
    application may need for its own blocking work)."""

    def __init__(self, workers: int | None = None, *, name: str = "the async database") -> None:
        self._name = name  # in the StoreClosedError message: "<name> is closed"
        self._pool = ThreadPoolExecutor(
            max_workers=workers or default_workers(), thread_name_prefix="sqlmem-aio"
        )
        self._closed = False

    async def run(self, call: Callable[[], R]) -> R:
        if self._closed:
            raise StoreClosedError(f"{self._name} is closed")
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()  # the caller's context vars (logging, tracing)
        try:
            return await loop.run_in_executor(self._pool, context.run, call)
        except RuntimeError as exc:  # the pool shut down between the check and the submit
            if self._closed:
                raise StoreClosedError(f"{self._name} is closed") from exc
            raise

    def shutdown(self) -> None:
        """No new calls; calls already running finish (the caller waits for them)."""
        self._closed = True
        self._pool.shutdown(wait=True, cancel_futures=True)


class _Proxy(Protocol):
    _store: Any
    _runner: Runner


def off_loop(
    method: Callable[Concatenate[Any, P], R],
) -> Callable[Concatenate[_Proxy, P], Coroutine[Any, Any, R]]:
    """The async twin of a store method: same name, arguments and result, awaited.

    Typed from the protocol's method, so mypy checks async calls like sync ones.
    """
    name = method.__name__

    async def call(self: _Proxy, /, *args: P.args, **kwargs: P.kwargs) -> R:
        bound = getattr(self._store, name)
        return await self._runner.run(functools.partial(bound, *args, **kwargs))

    call.__name__ = call.__qualname__ = name
    call.__doc__ = method.__doc__
    return call
