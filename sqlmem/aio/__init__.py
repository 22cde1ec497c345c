"""asyncio access to sqlmem on every backend (a file, ":memory:", PostgreSQL): the sync
methods and helpers, awaited, run off the event loop on the same database (see `runner`
for why threads and what cancellation guarantees, `atomic` for `async with adb.atomic()`,
`helpers` for the helpers' async forms)."""

from __future__ import annotations

from .agent_memory import AgentMemory as AgentMemory
from .db import AsyncMemoryDB, open
from .helpers import (
    Consolidator,
    ContextWindow,
    MemoryTools,
    WorkspaceExtractor,
    build_memory_pack,
    consolidate_daily_notes,
    inject_memory,
)
from .stores import AsyncDocumentStore, AsyncFactStore, AsyncHistoryStore

__all__ = [
    "AsyncDocumentStore",
    "AsyncFactStore",
    "AsyncHistoryStore",
    "AsyncMemoryDB",
    "Consolidator",
    "ContextWindow",
    "MemoryTools",
    "WorkspaceExtractor",
    "build_memory_pack",
    "consolidate_daily_notes",
    "inject_memory",
    "open",
]
