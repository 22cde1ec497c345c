"""sqlmem: an embedded SQLite memory engine for AI agents.

One agent's memory is one file: conversation history per session (with compaction
summaries and full-text search) and long-term facts searched with FTS5 and ranked by BM25.

    import sqlmem
    with sqlmem.open("memory.db") as db:
        db.history.append("chat:1", sqlmem.Message(role="user", content="hi"))
        db.facts.index(sqlmem.Fact(content="The user's dog is called Rex"))
        db.facts.search("what is my dog's name?")
"""

from __future__ import annotations

from .config import StoreConfig
from .context import (
    CompactionResult,
    Compactor,
    ExtractionError,
    Extractor,
    LLMExtractor,
    NopExtractor,
    estimate_tokens,
    inject_memory,
)
from .errors import (
    CorruptDatabaseError,
    FactNotFoundError,
    InvalidAgentIdError,
    InvalidArgumentError,
    InvalidQueryError,
    MigrationChecksumError,
    MigrationError,
    SchemaTooNewError,
    SqlmemError,
    StorageBusyError,
    StoreClosedError,
)
from .factory import (
    AgentMemoryConfig,
    MemoryFactory,
    OwnedFactStore,
    OwnedHistoryStore,
    open_fact_store,
    open_history_store,
)
from .memory.facts import InMemoryFactStore
from .memory.history import InMemoryHistoryStore
from .protocols import FactStore, HistoryStore, SearchMode
from .records import Fact, Message, ToolCall
from .sqlite.db import CheckReport, MemoryDB
from .sqlite.db import open as open  # public as sqlmem.open, kept out of __all__

__version__ = "0.1.0"

# `open` is public as `sqlmem.open` but left out of __all__, so that
# `from sqlmem import *` does not shadow the builtin open().

__all__ = [
    "AgentMemoryConfig",
    "CheckReport",
    "CompactionResult",
    "Compactor",
    "CorruptDatabaseError",
    "ExtractionError",
    "Extractor",
    "Fact",
    "FactNotFoundError",
    "FactStore",
    "HistoryStore",
    "InMemoryFactStore",
    "InMemoryHistoryStore",
    "InvalidAgentIdError",
    "InvalidArgumentError",
    "InvalidQueryError",
    "LLMExtractor",
    "MemoryDB",
    "MemoryFactory",
    "Message",
    "MigrationChecksumError",
    "MigrationError",
    "NopExtractor",
    "OwnedFactStore",
    "OwnedHistoryStore",
    "SchemaTooNewError",
    "SearchMode",
    "SqlmemError",
    "StorageBusyError",
    "StoreClosedError",
    "StoreConfig",
    "ToolCall",
    "__version__",
    "estimate_tokens",
    "inject_memory",
    "open_fact_store",
    "open_history_store",
]
