"""The kinds of async handle (`rules.async_guard` reads `ASYNC_HANDLES` from here once
`sqlmem.aio` is loaded)."""

from __future__ import annotations

from typing import Any

from .db import AsyncMemoryDB
from .runner import Runner
from .stores import AsyncStore

__all__ = ["ASYNC_HANDLES", "AsyncHelper"]


class AsyncHelper:
    """Base of the async helpers: the sync helper they run off the loop (`sync`)."""

    sync: Any
    _runner: Runner | None


ASYNC_HANDLES: tuple[type, ...] = (AsyncMemoryDB, AsyncStore, AsyncHelper)
