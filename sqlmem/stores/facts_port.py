"""What a backend executes for the fact store front: `FactStorePort`, and the two frozen
values a read hands it (`FactQuery`, `FactListing`).

Everything reaching a port is already checked: rows come from `rules.filters.prepare_fact`
(batches merged by `merge_batch`), ids are ids a fact can have, filters are built once
from the caller's keywords, limits are positive. A port therefore only runs its storage
(SQL on SQLite and PostgreSQL, dictionary work in memory) and builds `Fact`s from what it
read; it never re-checks an argument and never raises for one.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from ..protocols import Embedder
from ..records import Fact
from ..rules.filters import FactRow, Filters
from ..rules.items import ItemFilters
from ..search.query import QueryCompiler, Term

__all__ = ["FactListing", "FactQuery", "FactStorePort", "FactVectorSlot", "Progress"]

Progress = Callable[[int, int], object]


@dataclass(frozen=True, slots=True)
class FactQuery:
    """One search as the front checked it. `mode` "raw": `text` is FTS5 MATCH text (not
    blank, within the term limit); "any"/"all": `terms` are the query's distinct words
    (at least one; more than the store's term limit are cut by the port, which alone
    knows how many rows hold each); "vector"/"hybrid": `text` is not blank and `terms`
    its words for the hybrid's lexical leg (possibly none). `limit` > 0."""

    text: str
    mode: Literal["any", "all", "raw", "vector", "hybrid"]
    limit: int
    filters: Filters
    items: ItemFilters
    terms: tuple[Term, ...] = ()


@dataclass(frozen=True, slots=True)
class FactListing:
    """A listing: the facts passing `filters` and `items`, newest first by created_at
    (then insertion order) read as the page `offset`, `limit`; or, with
    `oldest_first`, every passing fact oldest first (`limit` None)."""

    filters: Filters
    items: ItemFilters
    limit: int | None
    offset: int = 0
    oldest_first: bool = False


class FactVectorSlot(Protocol):
    """A store's vectors as the front sees them: the embedder (None: BM25 only), how a
    user gives the store one, and the filling of missing vectors (only called when there
    is an embedder)."""

    @property
    def embedder(self) -> Embedder | None: ...

    @property
    def hint(self) -> str:
        """How to open this store with an embedder (ends the "needs an embedder" error)."""
        ...

    def embed_pending(self, batch_size: int, progress: Progress | None) -> int: ...


@runtime_checkable
class FactStorePort(Protocol):
    """The storage operations of one backend's fact store."""

    #: Why mode "raw" is refused here, or None when FTS5 queries run.
    raw_refusal: str | None

    @property
    def compiler(self) -> QueryCompiler:
        """The query compiler for the tokenizer this store's text is indexed with."""
        ...

    @property
    def vectors(self) -> FactVectorSlot: ...

    # writes: rows checked and merged, `embed` False for an import (vectors come later)
    def write(self, rows: Sequence[FactRow], *, embed: bool) -> None: ...

    def remember(self, row: FactRow) -> str: ...

    def supersede(self, old_id: str, row: FactRow) -> str: ...

    def promote(self, fact_id: str, layer: str) -> Fact | None: ...

    def promote_eligible(self, params: dict[str, Any]) -> builtins.list[str]: ...

    def expire(self) -> int: ...

    def delete(self, ids: Sequence[str]) -> int: ...

    # reads
    def get(self, fact_id: str) -> Fact | None: ...

    def count(self) -> int: ...

    def history_of_key(self, key: str) -> builtins.list[Fact]: ...

    def history_of_fact(self, fact_id: str) -> builtins.list[Fact]: ...

    def ranked(self, query: FactQuery) -> builtins.list[Fact]: ...

    def semantic(self, query: FactQuery) -> builtins.list[Fact]: ...

    def listed(self, listing: FactListing) -> builtins.list[Fact]: ...

    def tags(self) -> dict[str, int]: ...

    def categories(self) -> builtins.list[str]: ...
