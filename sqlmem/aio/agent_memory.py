"""`sqlmem.aio.AgentMemory`: the agent turn of `sqlmem.AgentMemory`, awaited.

Same arguments, rules and results as the sync form, which it runs on a thread over the
async database's sync database (`adb.sync`: the same engine, the same file), so the event
loop never waits for a lock, the disk or the consolidation model.

`complete` may be sync or async. An async one is awaited on the caller's event loop: the
worker thread hands the coroutine to the loop (`asyncio.run_coroutine_threadsafe`) and
waits for its answer, so an async model client bound to that loop (its connection pool,
its rate limiter) is used from the loop it belongs to.

Cancelling `before` or `after` stops the awaiting, not the turn's writes already started
on the thread: those finish whole (each store call is one transaction).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from ..context.agent_memory import AgentMemory as SyncAgentMemory
from ..context.agent_memory import Reply
from ..context.context_window import BuiltContext
from ..context.pack_config import PackConfig
from ..context.workspace_extract import WorkspaceExtractor
from ..errors import InvalidArgumentError
from ..records import Message

__all__ = ["AgentMemory"]

R = TypeVar("R")

#: The loop of the `before`/`after` call a worker thread is serving (copied into the
#: thread with the caller's context by `asyncio.to_thread`).
_CALLER_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop] = contextvars.ContextVar(
    "sqlmem_agent_memory_loop"
)


def _is_async(complete: object) -> bool:
    return inspect.iscoroutinefunction(complete) or inspect.iscoroutinefunction(
        getattr(complete, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    )


def _on_caller_loop(complete: Callable[[str], Awaitable[str]]) -> Callable[[str], str]:
    """A sync `complete` for the worker thread that awaits the async one on the loop of
    the turn being served."""

    def call(prompt: str) -> str:
        loop = _CALLER_LOOP.get()
        future = asyncio.run_coroutine_threadsafe(_awaited(complete, prompt), loop)
        return future.result()

    return call


async def _awaited(complete: Callable[[str], Awaitable[str]], prompt: str) -> str:
    return await complete(prompt)


class AgentMemory:
    """`sqlmem.AgentMemory` over an async database, with awaited `before` and `after`.
    An extractor passed as `extract` works on the async database's sync one (`adb.sync`)."""

    def __init__(
        self,
        adb: Any,
        complete: Callable[[str], str] | Callable[[str], Awaitable[str]],
        *,
        system_prompt: str = "",
        max_input_tokens: int = 128_000,
        memory_window: int = 50,
        keep_last: int = 10,
        pack: PackConfig | None = None,
        extract: bool | WorkspaceExtractor = True,
    ) -> None:
        sync_db = getattr(adb, "sync", None)
        if sync_db is None or not hasattr(sync_db, "history"):
            raise InvalidArgumentError(
                "sqlmem.aio.AgentMemory takes an async database (await sqlmem.aio.open(...)); "
                "for a sync one use sqlmem.AgentMemory"
            )
        if not callable(complete):
            raise InvalidArgumentError("complete must be callable: complete(prompt) -> str")
        model: Callable[[str], str]
        if _is_async(complete):
            model = _on_caller_loop(cast(Callable[[str], Awaitable[str]], complete))
        else:
            model = cast(Callable[[str], str], complete)
        self.sync = SyncAgentMemory(
            sync_db,
            model,
            system_prompt=system_prompt,
            max_input_tokens=max_input_tokens,
            memory_window=memory_window,
            keep_last=keep_last,
            pack=pack,
            extract=extract,
        )

    async def before(self, session_id: str, user_message: str | Message) -> BuiltContext:
        """Store the user's message and return this turn's prompt."""
        return await self._off_loop(functools.partial(self.sync.before, session_id, user_message))

    async def after(self, session_id: str, reply: Reply) -> None:
        """Store the reply, then consolidate and extract when due."""
        await self._off_loop(functools.partial(self.sync.after, session_id, reply))

    async def _off_loop(self, call: Callable[[], R]) -> R:
        _CALLER_LOOP.set(asyncio.get_running_loop())
        return await asyncio.to_thread(call)
