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
from .db import CheckReport, MemoryDB, open
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
from .protocols import FactStore, HistoryStore, SearchMode
from .records import Fact, Message, ToolCall

__version__ = "0.1.0"

__all__ = [
    "CheckReport",
    "CorruptDatabaseError",
    "Fact",
    "FactNotFoundError",
    "FactStore",
    "HistoryStore",
    "InvalidAgentIdError",
    "InvalidArgumentError",
    "InvalidQueryError",
    "MemoryDB",
    "Message",
    "MigrationChecksumError",
    "MigrationError",
    "SchemaTooNewError",
    "SearchMode",
    "SqlmemError",
    "StorageBusyError",
    "StoreClosedError",
    "StoreConfig",
    "ToolCall",
    "__version__",
    "open",
]
