"""The public store protocols. Third parties may implement them; sqlmem ships two of each
(SQLite and in-memory), and every helper in `sqlmem.context` is written against these."""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from .doc_records import (
    Document,
    DocumentHit,
    DocumentImport,
    DocumentInfo,
    DocumentWrite,
    RevisionInfo,
)
from .records import Fact, Message

if TYPE_CHECKING:  # numpy loads only with the stores that use it
    import numpy as np
    import numpy.typing as npt
__all__ = [
    "DocumentStore",
    "Embedder",
    "FactStore",
    "HistoryStore",
    "QueryEmbedder",
    "SearchMode",
]

SearchMode = Literal["any", "all", "raw", "vector", "hybrid"]
#: The modes of `HistoryStore.search`.
HistoryMode = Literal["any", "vector", "hybrid"]


@runtime_checkable
class HistoryStore(Protocol):
    """Conversation messages per session, with a compaction summary per session."""

    def append(self, session_id: str, message: Message) -> int: ...

    def append_many(self, session_id: str, messages: Iterable[Message]) -> list[int]: ...

    def get_recent(self, session_id: str, n: int, *, pair_safe: bool = True) -> list[Message]: ...

    def pop(self, session_id: str) -> Message | None: ...

    def around(
        self, session_id: str, seq: int, *, before: int = 0, after: int = 1
    ) -> list[Message]: ...

    def get_all(self, session_id: str, *, include_archived: bool = False) -> list[Message]: ...

    def count(self, session_id: str) -> int: ...

    def set_summary(self, session_id: str, text: str) -> None: ...

    def get_summary(self, session_id: str) -> str: ...

    def compact(self, session_id: str, keep_last: int, summary: str | None = None) -> int: ...

    def purge(self, session_id: str) -> None: ...

    def sessions(self) -> list[str]: ...

    def search(
        self,
        query: str,
        *,
        session_id: str | None = None,
        top_k: int = 10,
        mode: HistoryMode = "any",
    ) -> list[Message]: ...

    # 0.3: history by meaning

    def embed_pending(
        self, *, batch_size: int = 64, progress: Callable[[int, int], object] | None = None
    ) -> int: ...


@runtime_checkable
class FactStore(Protocol):
    """Long-term facts, searched with BM25 and filtered before ranking."""

    def index(self, fact: Fact) -> str: ...

    def index_many(self, facts: Iterable[Fact]) -> list[str]: ...

    def get(self, fact_id: str) -> Fact | None: ...

    def delete(self, fact_id: str) -> None: ...

    def delete_many(self, fact_ids: Iterable[str]) -> int: ...

    def count(self) -> int: ...

    def __len__(self) -> int: ...

    def search(
        self,
        query: str,
        top_k: int = 10,
        *,
        mode: SearchMode = "any",
        tags: Sequence[str] | None = None,
        category: str | None = None,
        source: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        layer: str | Sequence[str] | None = None,
        kind: str | None = None,
        min_confidence: float | None = None,
    ) -> list[Fact]: ...

    def search_by_metadata(self, key: str, value: Any) -> builtins.list[Fact]: ...

    def list(
        self,
        *,
        tags: Sequence[str] | None = None,
        category: str | None = None,
        source: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int = 20,
        offset: int = 0,
        layer: str | Sequence[str] | None = None,
        kind: str | None = None,
        min_confidence: float | None = None,
    ) -> builtins.list[Fact]: ...

    def tags(self) -> dict[str, int]: ...

    def categories(self) -> builtins.list[str]: ...

    # 0.2 memory items (SPEC 12)

    def remember(self, fact: Fact) -> str: ...

    def promote(self, fact_id: str, layer: str) -> Fact: ...

    def promote_eligible(
        self,
        *,
        from_layer: str = "episodic",
        to_layer: str = "semantic",
        min_confidence: float = 0.75,
        min_hits: int = 2,
    ) -> builtins.list[str]: ...

    def expire(self) -> int: ...

    # 0.2 vectors (SPEC 17)

    def embed_pending(
        self, *, batch_size: int = 64, progress: Callable[[int, int], object] | None = None
    ) -> int: ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors for semantic search (SPEC 17). sqlmem calls no model by
    itself: the caller passes one (`sqlmem.embedders` has a real offline model and a
    deterministic fake).

    `model` names the model; it is stored with every vector, and vectors of another model
    count as missing. `embed` returns a float32 array of shape `(len(texts), dim)`; sqlmem
    checks it (shape, dtype, NaN, inf, zero rows) before storing anything and normalises
    each row itself.
    """

    model: str

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


@runtime_checkable
class QueryEmbedder(Embedder, Protocol):
    """An `Embedder` that embeds a search query differently from a stored text.

    Asymmetric retrieval models (e5, bge, nomic) are trained with one prefix or instruction
    on queries and another on passages; embedding a query as if it were a passage costs them
    several points of recall. When an embedder has `embed_query`, every search (facts,
    history, packs, tools) embeds its query with it, and every stored text still goes
    through `embed`. Both must return vectors of the same dims.
    """

    def embed_query(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


@runtime_checkable
class DocumentStore(Protocol):
    """Workspace Markdown files (MEMORY.md, PROFILE.md, daily notes ...) with revisions
    and block-level search (SPEC 14)."""

    def write(
        self,
        path: str,
        content: str,
        *,
        enabled: bool | None = None,
        sort_order: int | None = None,
    ) -> DocumentWrite: ...

    def read(self, path: str) -> Document | None: ...

    def edit(
        self, path: str, old_text: str, new_text: str, *, replace_all: bool = False
    ) -> int: ...

    def append(self, path: str, text: str) -> Document: ...

    def append_daily(self, text: str, *, day: date | None = None) -> Document: ...

    def delete(self, path: str) -> None: ...

    def list(self, prefix: str = "") -> builtins.list[DocumentInfo]: ...

    def set_enabled(self, path: str, enabled: bool) -> None: ...

    def set_sort_order(self, path: str, n: int) -> None: ...

    def revisions(self, path: str) -> builtins.list[RevisionInfo]: ...

    def read_revision(self, path: str, revision: int) -> str: ...

    def restore(self, path: str, revision: int) -> DocumentWrite: ...

    def search(
        self, query: str, *, top_k: int = 10, prefix: str = ""
    ) -> builtins.list[DocumentHit]: ...

    def render_files(self) -> str: ...

    def render_memory_context(self, *, today: date | None = None, recent_days: int = 7) -> str: ...

    def export_dir(self, folder: str | os.PathLike[str]) -> int: ...

    def import_dir(self, folder: str | os.PathLike[str]) -> DocumentImport: ...
