"""`AsyncSqlmemStore`: `SqlmemStore` as LangGraph's `AsyncSqliteStore` behaves,
async first. In its own module for size; import it from `sqlmem.adapters.langgraph`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from langgraph.store.base import Op, Result

from ..errors import SqlmemError
from .langgraph_store import SqlmemStore

__all__ = ["AsyncSqlmemStore", "SyncCallInEventLoopError"]

_log = logging.getLogger("sqlmem")


class SyncCallInEventLoopError(SqlmemError, asyncio.InvalidStateError):
    """A sync call to an `AsyncSqlmemStore` from a thread running an event loop (it would
    block the loop); an `asyncio.InvalidStateError` too, as LangGraph's AsyncSqliteStore
    raises."""


class AsyncSqlmemStore(SqlmemStore):
    """The async-first twin (same arguments): like LangGraph's `AsyncSqliteStore`, it
    refuses sync calls (`get`, `put`, `search`, `batch` ...) made from a thread that runs
    an event loop, where they would block it; use the `a`-methods there. Sync calls from
    other threads are answered."""

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop on this thread: a sync call is fine here
            return super().batch(ops)
        raise SyncCallInEventLoopError(
            "AsyncSqlmemStore: a sync call from inside a running event loop would block "
            "it; await the async method (aget, aput, asearch, abatch ...) instead"
        )

    # TTL housekeeping as AsyncSqliteStore has it: coroutines, the sweeper an asyncio task.

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        """Delete every expired item (of every store in the file's kv table)."""
        return await self.asweep_ttl()

    async def start_ttl_sweeper(  # type: ignore[override]
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """Sweep expired items every `sweep_interval_minutes` (default: the ttl config's,
        else 5) in a task of the running loop, until `stop_ttl_sweeper()`."""
        if self.ttl_config is None:
            return asyncio.create_task(asyncio.sleep(0))
        if self._sweep_task is not None and not self._sweep_task.done():
            return self._sweep_task
        interval = float(
            sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5
        )
        stop = self._stop_sweep_task = asyncio.Event()

        async def sweep() -> None:
            while True:
                try:
                    await asyncio.wait_for(stop.wait(), interval * 60)
                    return
                except asyncio.TimeoutError:
                    pass
                try:
                    await self.asweep_ttl()
                except Exception:  # housekeeping: the next round tries again
                    _log.exception("sqlmem: LangGraph store ttl sweep failed")

        self._sweep_task = asyncio.create_task(sweep())
        return self._sweep_task

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        """Stop the sweeper task; True once it has stopped (or none was running)."""
        task = self._sweep_task
        if task is None or task.done():
            return True
        if self._stop_sweep_task is not None:
            self._stop_sweep_task.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        except asyncio.TimeoutError:
            return False
        self._sweep_task = None
        return True

    _sweep_task: asyncio.Task[None] | None = None
    _stop_sweep_task: asyncio.Event | None = None

    def close(self) -> None:
        """As `SqlmemStore.close`; a sweeper task still running is cancelled."""
        if self._sweep_task is not None and not self._sweep_task.done():
            self._sweep_task.cancel()
        super().close()
