"""The helpers, awaited: the same names, arguments and results as the sync ones.

Why not a second implementation: each helper's logic (what a pack selects, when a
consolidation runs, what a tool call answers) must not drift between sync and async. So
an async helper builds the sync helper over the async database's sync twin and runs it
off the event loop, on the database's runner (inside `async with adb.atomic()`, on the
block's thread, so its writes join the block).

Model callables (`complete`, `summarizer`) may be sync or async. The sync helper calls
them on its worker thread: a sync one runs there (never on the loop); an async one is
awaited on the event loop the helper was awaited from, the worker waiting for it, so the
loop is never blocked.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from .. import context as sync_helpers
from .. import tools as sync_tools
from ..context import (
    BuiltContext,
    CompactionResult,
    ConsolidationResult,
    ExtractionOutcome,
    MemoryPack,
    PackConfig,
)
from ..context.tokens import Estimator
from ..errors import SqlmemError, StoreClosedError
from ..records import Message
from ..tools.core import SpecStyle
from .db import AsyncMemoryDB
from .handles import AsyncHelper
from .runner import Runner
from .stores import AsyncStore

__all__ = [
    "Consolidator",
    "ContextWindow",
    "MemoryTools",
    "WorkspaceExtractor",
    "build_memory_pack",
    "consolidate_daily_notes",
    "inject_memory",
]

R = TypeVar("R")

#: The event loop of the async call a worker thread is serving (for async model calls).
_serving = threading.local()

#: Keyword arguments that are never model callables (called often, always sync).
_NOT_MODELS = frozenset({"estimator"})


def sync_of(value: Any) -> Any:
    """The sync twin of an async database, store or helper (of each, in a list or
    tuple); anything else as it is."""
    if isinstance(value, (AsyncMemoryDB, AsyncStore, AsyncHelper)):
        return value.sync
    if isinstance(value, (list, tuple)):
        return type(value)(sync_of(v) for v in value)
    return value


def _runner_of(*values: Any) -> Runner | None:
    """The runner of the first async database or store among `values` (or in a list)."""
    for value in values:
        if isinstance(value, AsyncMemoryDB):
            return value._runner
        if isinstance(value, AsyncStore):
            return value._runner
        if isinstance(value, AsyncHelper):
            return value._runner
        if isinstance(value, (list, tuple)):
            found = _runner_of(*value)
            if found is not None:
                return found
    return None


def model_bridge(fn: Any) -> Any:
    """A model callable the sync helper can call on its worker thread: a result that
    is awaitable is awaited on the serving event loop (see the module docstring)."""
    if not callable(fn):
        return fn  # the sync helper's own check names the problem

    def call(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        if not inspect.isawaitable(result):
            return result
        loop: asyncio.AbstractEventLoop | None = getattr(_serving, "loop", None)
        if loop is None:
            _close_unawaited(result)
            raise SqlmemError("an async model callable is only usable from an awaited helper")
        return asyncio.run_coroutine_threadsafe(_awaited(result), loop).result()

    return call


async def _awaited(awaitable: Awaitable[R]) -> R:
    return await awaitable


def _close_unawaited(awaitable: object) -> None:
    if inspect.iscoroutine(awaitable):
        awaitable.close()


def _prepared(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The sync helper's arguments: async handles as their sync twins, model callables
    bridged."""
    out_args = [model_bridge(a) if callable(a) and not _is_handle(a) else sync_of(a) for a in args]
    out_kwargs = {
        k: model_bridge(v) if callable(v) and k not in _NOT_MODELS and not _is_handle(v)
        else sync_of(v)
        for k, v in kwargs.items()
    }  # fmt: skip
    return out_args, out_kwargs


def _is_handle(value: object) -> bool:
    return isinstance(value, (AsyncMemoryDB, AsyncStore, AsyncHelper, type))


async def off_loop(runner: Runner | None, call: Callable[[], R]) -> R:
    """`call()` on the runner's threads (or asyncio's, for sync stores), with the loop
    recorded for async model calls."""
    loop = asyncio.get_running_loop()

    def serve() -> R:
        previous = getattr(_serving, "loop", None)
        _serving.loop = loop
        try:
            return call()
        finally:
            _serving.loop = previous

    if runner is None:
        return await asyncio.to_thread(serve)
    return await runner.run(serve)


# -- functions --------------------------------------------------------------------------


async def build_memory_pack(
    store: Any,
    query: str,
    config: PackConfig | None = None,
    *,
    now: datetime | None = None,
) -> MemoryPack:
    """`sqlmem.build_memory_pack`, awaited (`store`: async fact stores, or sync ones)."""
    sync_store = sync_of(store)
    call = functools.partial(sync_helpers.build_memory_pack, sync_store, query, config, now=now)
    return await off_loop(_runner_of(store), call)


async def inject_memory(
    store: Any,
    query: str,
    *,
    max_facts: int = 10,
    max_tokens: int = 2000,
    estimator: Estimator | None = None,
) -> str:
    """`sqlmem.inject_memory`, awaited."""
    call = functools.partial(
        sync_helpers.inject_memory, sync_of(store), query, max_facts=max_facts,
        max_tokens=max_tokens, estimator=estimator,
    )  # fmt: skip
    return await off_loop(_runner_of(store), call)


async def consolidate_daily_notes(db: Any, complete: Any, *, days: int = 7) -> ConsolidationResult:
    """`sqlmem.consolidate_daily_notes`, awaited; `complete` sync or async."""
    call = functools.partial(
        sync_helpers.consolidate_daily_notes, sync_of(db), model_bridge(complete), days=days
    )
    return await off_loop(_runner_of(db), call)


# -- classes ----------------------------------------------------------------------------


class _Wrapped(AsyncHelper):
    """An async helper: the sync helper built at once (its argument checks raise here,
    as the sync class's do), run off the loop when awaited."""

    _sync_class: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        sync_args, sync_kwargs = _prepared(args, kwargs)
        self.sync = self._sync_class(*sync_args, **sync_kwargs)
        self._runner = _runner_of(*args, *kwargs.values())

    async def _run(self, method: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        sync_args, sync_kwargs = _prepared(args, kwargs)
        return await off_loop(self._runner, functools.partial(method, *sync_args, **sync_kwargs))

    def __getattr__(self, name: str) -> Any:  # settings (memory_window, ...) as on the sync one
        if name.startswith("_") or name == "sync":
            raise AttributeError(name)
        return getattr(self.sync, name)

    def __repr__(self) -> str:
        return f"<async {self.sync!r}>"


class ContextWindow(_Wrapped):
    """`sqlmem.ContextWindow` over an async history (or database), awaited."""

    _sync_class = sync_helpers.ContextWindow

    async def build(
        self,
        session_id: str,
        system_prompt: str,
        user_message: str | Message,
        **options: Any,
    ) -> BuiltContext:
        result: BuiltContext = await self._run(
            self.sync.build, session_id, system_prompt, user_message, **options
        )
        return result

    async def emergency(self, session_id: str) -> CompactionResult:
        result: CompactionResult = await self._run(self.sync.emergency, session_id)
        return result


class Consolidator(_Wrapped):
    """`sqlmem.Consolidator(adb, complete, ...)`, awaited; `complete` sync or async."""

    _sync_class = sync_helpers.Consolidator

    async def maybe_consolidate(self, session_id: str) -> ConsolidationResult:
        result: ConsolidationResult = await self._run(self.sync.maybe_consolidate, session_id)
        return result


class WorkspaceExtractor(_Wrapped):
    """`sqlmem.WorkspaceExtractor(adb, complete, ...)`, awaited; `complete` sync or
    async."""

    _sync_class = sync_helpers.WorkspaceExtractor

    async def run(self, session_id: str, **options: Any) -> ExtractionOutcome:
        result: ExtractionOutcome = await self._run(self.sync.run, session_id, **options)
        return result


class MemoryTools(AsyncHelper):
    """`sqlmem.MemoryTools(adb)`: `specs()` and `call()` awaited; `call` never raises,
    as the sync one."""

    sync: sync_tools.MemoryTools

    def __init__(
        self, db: Any, *, groups: Iterable[str] = sync_tools.GROUPS, read_only: bool = False
    ) -> None:
        self.sync = sync_tools.MemoryTools(sync_of(db), groups=groups, read_only=read_only)
        self._runner = _runner_of(db)

    @property
    def names(self) -> list[str]:
        return self.sync.names

    async def specs(self, style: SpecStyle = "openai") -> list[dict[str, Any]]:
        return self.sync.specs(style)  # no I/O: no thread

    async def call(
        self, name: str, arguments: str | bytes | Mapping[str, Any] | None = None
    ) -> str:
        try:
            return await off_loop(self._runner, functools.partial(self.sync.call, name, arguments))
        except StoreClosedError:  # the runner refused: answered as the sync tools do
            return json.dumps(
                {"error": "the memory database is closed", "code": "internal"},
                separators=(",", ":"),
            )

    def __repr__(self) -> str:
        return f"<async {self.sync!r}>"
