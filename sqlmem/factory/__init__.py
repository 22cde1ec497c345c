"""Opening memory databases for programs: one per agent (`MemoryFactory`), or one store.

- `agent_config`: `AgentMemoryConfig`, one agent's settings, and their checks;
- `agents`: `MemoryFactory`, agents' databases opened lazily and bounded in number;
- `single`: `open_history_store` / `open_fact_store`, one store that owns its database.
"""

from __future__ import annotations

from .agent_config import AgentMemoryConfig
from .agents import MemoryFactory
from .single import OwnedFactStore, OwnedHistoryStore, open_fact_store, open_history_store

__all__ = [
    "AgentMemoryConfig",
    "MemoryFactory",
    "OwnedFactStore",
    "OwnedHistoryStore",
    "open_fact_store",
    "open_history_store",
]
