"""Context helpers an agent loop calls around each turn, written only against the store
protocols so they work with the SQLite stores, the in-memory twins and third-party stores:
memory injection into the prompt, history compaction, and fact extraction."""

from __future__ import annotations

from .agent_memory import AgentMemory
from .compactor import CompactionResult, Compactor, Summarizer
from .consolidate import ConsolidationResult, Consolidator, consolidate_daily_notes
from .context_window import SUMMARY_PREFIX, BuiltContext, ContextWindow
from .extract import ExtractionError, Extractor, LLMExtractor, NopExtractor
from .inject import inject_memory
from .pack import MemoryPack, PackItem, build_memory_pack
from .pack_config import PackConfig
from .resolver import ContradictionResolver
from .tokens import Estimator, estimate_tokens
from .workspace_extract import ExtractionOutcome, WorkspaceExtractor

__all__ = [
    "SUMMARY_PREFIX",
    "AgentMemory",
    "BuiltContext",
    "CompactionResult",
    "Compactor",
    "ConsolidationResult",
    "Consolidator",
    "ContextWindow",
    "ContradictionResolver",
    "Estimator",
    "ExtractionError",
    "ExtractionOutcome",
    "Extractor",
    "LLMExtractor",
    "MemoryPack",
    "NopExtractor",
    "PackConfig",
    "PackItem",
    "Summarizer",
    "WorkspaceExtractor",
    "build_memory_pack",
    "consolidate_daily_notes",
    "estimate_tokens",
    "inject_memory",
]
