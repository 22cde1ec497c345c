"""The public store protocols. Third parties may implement them; sqlmem ships three of each
(SQLite, in-memory, PostgreSQL), and every helper in `sqlmem.context` is written against
these: `Database` for one agent's memory, the store protocols for its parts, and the
optional capabilities a backend may add (`LayeredSearch`, `VectorSearch`), each with a
type guard so a helper asks "can this store do it?" in one typed place."""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import date, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeGuard, runtime_checkable

from .doc_records import (
    Document,
    DocumentHit,
    DocumentImport,
    DocumentInfo,
    DocumentWrite,
    RevisionInfo,
)
from .records import Fact, Message
from .rules.forget import ForgetReport

if TYPE_CHECKING:  # numpy loads only with the stores that use it
    import numpy as np
    import numpy.typing as npt
    from typing_extensions import Self

    from .rules.candidates import FactCandidate
__all__ = [
    "ArchiveBoundary",
    "CheckResult",
    "Closable",
    "Database",
    "DocumentStore",
    "Embedder",
    "FactState",
    "FactStore",
    "Forgetting",
    "HistoryStore",
    "LayeredSearch",
    "QueryEmbedder",
    "SearchMode",
    "VectorSearch",
    "has_archive_boundary",
    "has_forgetting",
    "has_layered_search",
    "has_vector_search",
    "is_closed",
]

SearchMode = Literal["any", "all", "raw", "vector", "hybrid"]
#: The modes of `HistoryStore.search`.
HistoryMode = Literal["any", "vector", "hybrid"]
#: Which stored facts `FactStore.list(state=...)` shows: the live ones (what every
#: other read shows), the superseded ones, the expired ones not yet deleted, or all.
FactState = Literal["live", "superseded", "expired", "all"]


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

    def sessions(self, *, after: str | None = None, limit: int | None = None) -> list[str]: ...

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
class Resolver(Protocol):
    """Names the live fact that `fact` supersedes in `store`, or None (what
    `remember(fact, resolver=...)` takes; the rule applied to its answer is in
    `sqlmem.rules.resolve`)."""

    def resolve(self, store: FactStore, fact: Fact) -> str | None: ...


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
        as_of: datetime | None = None,
    ) -> list[Fact]: ...

    def search_by_metadata(
        self, key: str, value: Any, *, limit: int | None = None
    ) -> builtins.list[Fact]:
        """Facts whose metadata `key` equals `value`. Without `limit`, every match, oldest
        first (the whole set: its size grows with the store); with `limit`, the newest
        `limit` matches, newest first, read as one bounded page."""
        ...

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
        as_of: datetime | None = None,
        state: FactState = "live",
    ) -> builtins.list[Fact]: ...

    def tags(self) -> dict[str, int]: ...

    def categories(self) -> builtins.list[str]: ...

    # 0.2 memory items

    def remember(self, fact: Fact, *, resolver: Resolver | None = None) -> str: ...

    # 0.3 facts that change: chains by key, valid time

    def supersede(self, old_id: str, fact: Fact) -> str: ...

    def history(self, *, key: str | None = None, id: str | None = None) -> builtins.list[Fact]: ...

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

    # 0.2 vectors

    def embed_pending(
        self, *, batch_size: int = 64, progress: Callable[[int, int], object] | None = None
    ) -> int: ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors for semantic search. sqlmem calls no model by
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
    and block-level search."""

    def write(
        self,
        path: str,
        content: str,
        *,
        enabled: bool | None = None,
        sort_order: int | None = None,
        expected_revision: int | None = None,
    ) -> DocumentWrite: ...

    def read(self, path: str) -> Document | None: ...

    def edit(
        self,
        path: str,
        old_text: str,
        new_text: str,
        *,
        replace_all: bool = False,
        expected_revision: int | None = None,
    ) -> int: ...

    def append(self, path: str, text: str, *, expected_revision: int | None = None) -> Document: ...

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


@runtime_checkable
class CheckResult(Protocol):
    """What `Database.check()` reports: `ok` for a healthy database, else `problems`;
    `path` names what was checked (a file, an agent, or ":memory:")."""

    @property
    def path(self) -> str: ...

    @property
    def ok(self) -> bool: ...

    @property
    def problems(self) -> builtins.list[str]: ...


@runtime_checkable
class Database(Protocol):
    """One agent's whole memory, whatever holds it: `sqlmem.open(path)` (a SQLite file),
    `sqlmem.open(":memory:")` (the in-memory twins), `sqlmem.open(url, agent_id=...)`
    (PostgreSQL). Every helper, the tools and the async API take one of these.

    `atomic()`: every write this thread makes through the stores inside the block commits
    together when it ends, or not at all when it raises. `stats()`: counts for monitoring
    (every backend reports `sessions`, `messages_active`, `messages_archived`, `facts`,
    `facts_without_vectors`, `documents`). `maintain()`: periodic care, returning what it
    did. `close()`: idempotent; later calls raise `StoreClosedError` (the in-memory
    database, which holds nothing to release, keeps answering).
    """

    @property
    def history(self) -> HistoryStore: ...

    @property
    def facts(self) -> FactStore: ...

    @property
    def docs(self) -> DocumentStore: ...

    def atomic(self) -> AbstractContextManager[None]: ...

    def stats(self) -> dict[str, Any]: ...

    def check(self) -> CheckResult: ...

    def maintain(self) -> dict[str, Any]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


@runtime_checkable
class Closable(Protocol):
    """A database that says whether it was closed (every shipped one does)."""

    @property
    def closed(self) -> bool: ...


def is_closed(db: object) -> bool:
    """Whether `db` says it was closed (False for one that cannot say)."""
    return isinstance(db, Closable) and db.closed


@runtime_checkable
class LayeredSearch(Protocol):
    """A fact store that gives a memory pack's candidates of every layer at once (the
    SQLite store: one ranked statement instead of one search per layer). The candidates
    are the same facts, in the same order, as `search(query, top_k=wants[layer],
    mode="any", layer=layer, min_confidence=...)` per layer (the newest by `updated_at`
    for a blank query); `FactCandidate.materialize` builds the `Fact`s of those kept."""

    def layered_candidates(
        self, query: str, wants: Mapping[str, int], *, min_confidence: float = 0.0
    ) -> dict[str, builtins.list[FactCandidate]]: ...


@runtime_checkable
class VectorSearch(Protocol):
    """A store (facts or history) that may hold vectors: with an `embedder` set, search
    modes "vector" and "hybrid" work on it."""

    @property
    def embedder(self) -> Embedder | None: ...


@runtime_checkable
class ArchiveBoundary(Protocol):
    """A history store that says where a session's archive ends without reading its
    messages (an inspector's session page on a long session). SQLite's, the in-memory
    and PostgreSQL's stores have it; a third party's history store need not."""

    def archived_seq(self, session_id: str) -> int:
        """The seq up to which the session is archived: every message at or before it
        is archived, every later one active (0: nothing archived, or no such session)."""
        ...


@runtime_checkable
class Forgetting(Protocol):
    """A database that forgets a source and what was derived only from it: a session, a
    message (`"msg:{session}#{seq}"`) or a document (`"doc:{path}"`), and every fact whose
    references all point into it, in one transaction. SQLite's, the in-memory and
    PostgreSQL's databases all have it; a database of a third party need not."""

    def forget(self, source: str) -> ForgetReport: ...


def has_archive_boundary(store: object) -> TypeGuard[ArchiveBoundary]:
    """Whether the history `store` reads a session's archive boundary by itself."""
    return _has(ArchiveBoundary, store)


def has_forgetting(db: object) -> TypeGuard[Forgetting]:
    """Whether `db` can `forget(source)`."""
    return _has(Forgetting, db)


def has_layered_search(store: object) -> TypeGuard[LayeredSearch]:
    """Whether `store` offers the one-statement layered search of a memory pack."""
    return _has(LayeredSearch, store)


def has_vector_search(store: object) -> TypeGuard[VectorSearch]:
    """Whether `store` has an embedder now, so "vector" and "hybrid" searches work."""
    return _has(VectorSearch, store) and getattr(store, "embedder", None) is not None


#: (capability, class) -> whether the class offers it. A runtime-checkable isinstance
#: costs ~10 µs on CPython 3.11 (it looks up every member); a pack or an injection asks on
#: every call, so the answer is kept per class (capabilities are methods and properties,
#: which belong to the class).
_OFFERS: dict[tuple[type, type], bool] = {}


def _has(capability: type, store: object) -> bool:
    key = (capability, type(store))
    offered = _OFFERS.get(key)
    if offered is None:
        offered = _OFFERS[key] = isinstance(store, capability)
    return offered
