"""asyncio access to sqlmem's stores (SPEC 18): the sync methods, awaited, run off the
event loop on the same engine (see `runner` for why threads, and what cancellation
guarantees)."""

from __future__ import annotations

from .agent_memory import AgentMemory as AgentMemory
from .db import AsyncMemoryDB, open
from .stores import AsyncDocumentStore, AsyncFactStore, AsyncHistoryStore

__all__ = ["AsyncDocumentStore", "AsyncFactStore", "AsyncHistoryStore", "AsyncMemoryDB", "open"]
