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

import importlib
from typing import TYPE_CHECKING

from .errors import (
    CorruptDatabaseError,
    DocumentNotFoundError,
    EditMismatchError,
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

if TYPE_CHECKING:  # what the lazy attributes below resolve to, for type checkers and IDEs
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
    from .doc_records import (
        Document,
        DocumentHit,
        DocumentImport,
        DocumentInfo,
        DocumentWrite,
        RevisionInfo,
    )
    from .factory import (
        AgentMemoryConfig,
        MemoryFactory,
        OwnedFactStore,
        OwnedHistoryStore,
        open_fact_store,
        open_history_store,
    )
    from .memory.docs import InMemoryDocumentStore
    from .memory.facts import InMemoryFactStore
    from .memory.history import InMemoryHistoryStore
    from .protocols import DocumentStore, FactStore, HistoryStore, QueryEmbedder, SearchMode
    from .records import Fact, Message, ToolCall
    from .sqlite.db import CheckReport, MemoryDB
    from .sqlite.db import open as open  # public as sqlmem.open, kept out of __all__
    from .tools import MemoryTools

__version__ = "0.2.0"

# Everything but the errors loads on first use (PEP 562): `import sqlmem` then costs less than
# importing apsw and pydantic (of the two it loads apsw only), where loading every module at
# once cost 5 times that (pydantic models, the SQLite backend, the context helpers, numpy for
# the in-memory twins). A program that never touches the twins never loads numpy; the CLI is
# never loaded by `import sqlmem` at all. Each name is imported once, then cached in this
# module, so later accesses are plain lookups (CPython 3.11 does not specialise attribute
# reads on a module with __getattr__: a `sqlmem.Message` read costs ~30 ns instead of ~10,
# under 1% of building the Message; `from sqlmem import Message` costs nothing per call).
_LAZY: dict[str, str] = {
    "StoreConfig": ".config",
    **dict.fromkeys(
        (
            "Document",
            "DocumentHit",
            "DocumentImport",
            "DocumentInfo",
            "DocumentWrite",
            "RevisionInfo",
        ),
        ".doc_records",
    ),
    "InMemoryDocumentStore": ".memory.docs",
    **dict.fromkeys(
        (
            "BuiltContext",
            "CompactionResult",
            "Compactor",
            "ConsolidationResult",
            "Consolidator",
            "ContextWindow",
            "ExtractionError",
            "ExtractionOutcome",
            "Extractor",
            "LLMExtractor",
            "MemoryPack",
            "NopExtractor",
            "PackConfig",
            "PackItem",
            "QueryEmbedder",
            "WorkspaceExtractor",
            "build_memory_pack",
            "consolidate_daily_notes",
            "estimate_tokens",
            "inject_memory",
        ),
        ".context",
    ),
    **dict.fromkeys(
        (
            "AgentMemoryConfig",
            "MemoryFactory",
            "OwnedFactStore",
            "OwnedHistoryStore",
            "open_fact_store",
            "open_history_store",
        ),
        ".factory",
    ),
    "InMemoryFactStore": ".memory.facts",
    "InMemoryHistoryStore": ".memory.history",
    **dict.fromkeys(
        (
            "DocumentStore",
            "Embedder",
            "FactStore",
            "HistoryStore",
            "QueryEmbedder",
            "SearchMode",
        ),
        ".protocols",
    ),
    **dict.fromkeys(("Fact", "Message", "ToolCall"), ".records"),
    **dict.fromkeys(("CheckReport", "MemoryDB", "open"), ".sqlite.db"),
    "MemoryTools": ".tools",
}


#: Packages reachable as attributes of `sqlmem` without their own import statement.
_SUBPACKAGES = frozenset({"aio", "embedders", "memory"})


def __getattr__(name: str) -> object:
    if name in _SUBPACKAGES:  # e.g. `sqlmem.memory.open()` after a bare `import sqlmem`
        value = importlib.import_module(f".{name}", __name__)
        globals()[name] = value
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


# `open` is public as `sqlmem.open` but left out of __all__, so that
# `from sqlmem import *` does not shadow the builtin open().

__all__ = [
    "AgentMemoryConfig",
    "BuiltContext",
    "CheckReport",
    "CompactionResult",
    "Compactor",
    "ConsolidationResult",
    "Consolidator",
    "ContextWindow",
    "CorruptDatabaseError",
    "Document",
    "DocumentHit",
    "DocumentImport",
    "DocumentInfo",
    "DocumentNotFoundError",
    "DocumentStore",
    "DocumentWrite",
    "EditMismatchError",
    "Embedder",
    "ExtractionError",
    "ExtractionOutcome",
    "Extractor",
    "Fact",
    "FactNotFoundError",
    "FactStore",
    "HistoryStore",
    "InMemoryDocumentStore",
    "InMemoryFactStore",
    "InMemoryHistoryStore",
    "InvalidAgentIdError",
    "InvalidArgumentError",
    "InvalidQueryError",
    "LLMExtractor",
    "MemoryDB",
    "MemoryFactory",
    "MemoryPack",
    "MemoryTools",
    "Message",
    "MigrationChecksumError",
    "MigrationError",
    "NopExtractor",
    "OwnedFactStore",
    "OwnedHistoryStore",
    "PackConfig",
    "PackItem",
    "QueryEmbedder",
    "RevisionInfo",
    "SchemaTooNewError",
    "SearchMode",
    "SqlmemError",
    "StorageBusyError",
    "StoreClosedError",
    "StoreConfig",
    "ToolCall",
    "WorkspaceExtractor",
    "__version__",
    "build_memory_pack",
    "consolidate_daily_notes",
    "estimate_tokens",
    "inject_memory",
    "open_fact_store",
    "open_history_store",
]
