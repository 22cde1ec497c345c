"""sqlmem: an embedded SQLite memory engine for AI agents.

One agent's memory is one file: conversation history per session (with compaction
summaries and full-text search) and long-term facts searched with FTS5 and ranked by BM25.

    import sqlmem
    with sqlmem.open("memory.db") as db:
        db.history.append("chat:1", sqlmem.Message(role="user", content="hi"))
        db.facts.index(sqlmem.Fact(content="The user's dog is called Rex"))
        db.facts.search("what is my dog's name?")
"""

# ruff: noqa: I001 - the re-exports below are one `from m import (A as A, ...)` per module
# (the repository's import sorting would split each `as` import into a statement of its own)
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# `Name as Name`: re-exported for type checkers in strict mode (`__all__` below is generated,
# so they cannot read it).
from .errors import (
    CommitUnknownError as CommitUnknownError,
    CorruptDatabaseError as CorruptDatabaseError,
    DocumentNotFoundError as DocumentNotFoundError,
    EditMismatchError as EditMismatchError,
    FactNotFoundError as FactNotFoundError,
    InvalidAgentIdError as InvalidAgentIdError,
    InvalidArgumentError as InvalidArgumentError,
    InvalidQueryError as InvalidQueryError,
    MigrationChecksumError as MigrationChecksumError,
    MigrationError as MigrationError,
    MissingExtraError as MissingExtraError,
    RevisionConflictError as RevisionConflictError,
    SchemaTooNewError as SchemaTooNewError,
    SqlmemError as SqlmemError,
    StorageBusyError as StorageBusyError,
    StoreClosedError as StoreClosedError,
)

if TYPE_CHECKING:  # what the lazy attributes below resolve to, for type checkers and IDEs
    from .config import (
        StoreConfig as StoreConfig,
    )
    from .context import (
        AgentMemory as AgentMemory,
        BuiltContext as BuiltContext,
        CompactionResult as CompactionResult,
        Compactor as Compactor,
        ConsolidationResult as ConsolidationResult,
        Consolidator as Consolidator,
        ContextWindow as ContextWindow,
        ContradictionResolver as ContradictionResolver,
        ExtractionError as ExtractionError,
        ExtractionOutcome as ExtractionOutcome,
        Extractor as Extractor,
        LLMExtractor as LLMExtractor,
        MemoryPack as MemoryPack,
        NopExtractor as NopExtractor,
        PackConfig as PackConfig,
        PackItem as PackItem,
        WorkspaceExtractor as WorkspaceExtractor,
        build_memory_pack as build_memory_pack,
        consolidate_daily_notes as consolidate_daily_notes,
        estimate_tokens as estimate_tokens,
        inject_memory as inject_memory,
    )
    from .doc_records import (
        Document as Document,
        DocumentHit as DocumentHit,
        DocumentImport as DocumentImport,
        DocumentInfo as DocumentInfo,
        DocumentWrite as DocumentWrite,
        RevisionInfo as RevisionInfo,
    )
    from .factory import (
        AgentMemoryConfig as AgentMemoryConfig,
        MemoryFactory as MemoryFactory,
        OwnedFactStore as OwnedFactStore,
        OwnedHistoryStore as OwnedHistoryStore,
        open_fact_store as open_fact_store,
        open_history_store as open_history_store,
    )
    from .inmemory.docs import (
        InMemoryDocumentStore as InMemoryDocumentStore,
    )
    from .inmemory.facts import (
        InMemoryFactStore as InMemoryFactStore,
    )
    from .inmemory.history import (
        InMemoryHistoryStore as InMemoryHistoryStore,
    )
    from .opening import (
        open as open,
    )
    from .protocols import (
        Database as Database,
        DocumentStore as DocumentStore,
        Embedder as Embedder,
        FactStore as FactStore,
        Forgetting as Forgetting,
        HistoryStore as HistoryStore,
        QueryEmbedder as QueryEmbedder,
        SearchMode as SearchMode,
    )
    from .records import (
        Fact as Fact,
        Message as Message,
        ToolCall as ToolCall,
    )
    from .rules.forget import (
        ForgetReport as ForgetReport,
    )
    from .sqlite.db import (
        CheckReport as CheckReport,
        MemoryDB as MemoryDB,
    )
    from .tools import (
        MemoryTools as MemoryTools,
    )

__version__ = "0.2.0"

#: Every public name by the module it comes from: the ONE list. `__all__`, `dir()` and the
#: lazy attributes are generated from it; tests/unit/test_public_names.py checks that the
#: TYPE_CHECKING imports above name the same things from the same modules, and that every
#: name resolves.
_PUBLIC: dict[str, tuple[str, ...]] = {
    ".errors": (
        "CommitUnknownError",
        "CorruptDatabaseError",
        "DocumentNotFoundError",
        "EditMismatchError",
        "FactNotFoundError",
        "InvalidAgentIdError",
        "InvalidArgumentError",
        "InvalidQueryError",
        "MigrationChecksumError",
        "MigrationError",
        "MissingExtraError",
        "RevisionConflictError",
        "SchemaTooNewError",
        "SqlmemError",
        "StorageBusyError",
        "StoreClosedError",
    ),
    ".config": ("StoreConfig",),
    ".context": (
        "AgentMemory",
        "BuiltContext",
        "CompactionResult",
        "Compactor",
        "ConsolidationResult",
        "Consolidator",
        "ContextWindow",
        "ContradictionResolver",
        "ExtractionError",
        "ExtractionOutcome",
        "Extractor",
        "LLMExtractor",
        "MemoryPack",
        "NopExtractor",
        "PackConfig",
        "PackItem",
        "WorkspaceExtractor",
        "build_memory_pack",
        "consolidate_daily_notes",
        "estimate_tokens",
        "inject_memory",
    ),
    ".doc_records": (
        "Document",
        "DocumentHit",
        "DocumentImport",
        "DocumentInfo",
        "DocumentWrite",
        "RevisionInfo",
    ),
    ".factory": (
        "AgentMemoryConfig",
        "MemoryFactory",
        "OwnedFactStore",
        "OwnedHistoryStore",
        "open_fact_store",
        "open_history_store",
    ),
    ".inmemory.docs": ("InMemoryDocumentStore",),
    ".inmemory.facts": ("InMemoryFactStore",),
    ".inmemory.history": ("InMemoryHistoryStore",),
    ".opening": ("open",),
    ".protocols": (
        "Database",
        "DocumentStore",
        "Embedder",
        "FactStore",
        "Forgetting",
        "HistoryStore",
        "QueryEmbedder",
        "SearchMode",
    ),
    ".records": ("Fact", "Message", "ToolCall"),
    ".rules.forget": ("ForgetReport",),
    ".sqlite.db": ("CheckReport", "MemoryDB"),
    ".tools": ("MemoryTools",),
}

#: Public, but left out of `__all__`: `from sqlmem import *` must not shadow the builtin
#: open().
_NOT_STARRED = frozenset({"open"})

# Everything but the errors loads on first use (PEP 562): `import sqlmem` then costs less than
# importing apsw and pydantic (of the two it loads apsw only), where loading every module at
# once cost 5 times that (pydantic models, the SQLite backend, the context helpers, numpy for
# the in-memory twins). A program that never touches the twins never loads numpy; the CLI is
# never loaded by `import sqlmem` at all. Each name is imported once, then cached in this
# module, so later accesses are plain lookups (CPython 3.11 does not specialise attribute
# reads on a module with __getattr__: a `sqlmem.Message` read costs ~30 ns instead of ~10,
# under 1% of building the Message; `from sqlmem import Message` costs nothing per call).
_LAZY: dict[str, str] = {
    name: module for module, names in _PUBLIC.items() if module != ".errors" for name in names
}


#: Packages reachable as attributes of `sqlmem` without their own import statement.
_SUBPACKAGES = frozenset({"aio", "embedders", "inmemory", "memory"})


def __getattr__(name: str) -> object:
    if name in _SUBPACKAGES:  # e.g. `sqlmem.inmemory.open()` after a bare `import sqlmem`
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


__all__ = sorted(  # generated from the one table above
    ["__version__"]
    + [name for names in _PUBLIC.values() for name in names if name not in _NOT_STARRED]
)
