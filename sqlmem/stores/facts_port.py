"""What a backend executes for the fact store front: `FactStorePort`, and the two frozen
values a read hands it (`FactQuery`, `FactListing`).

Everything reaching a port is already checked: rows come from `rules.filters.prepare_fact`
(batches merged by `merge_batch`), ids are ids a fact can have, filters are built once
from the caller's keywords, limits are positive. A port therefore only runs its storage
(SQL on SQLite and PostgreSQL, dictionary work in memory) and builds `Fact`s from what it
read; it never re-checks an argument. It reports only what the storage alone knows: an
unknown fact to supersede (`FactNotFoundError`), a raw FTS5 query SQLite cannot parse
(`InvalidQueryError`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..protocols import Embedder, FactState, SearchMode
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
    mode: SearchMode
    limit: int
    filters: Filters
    items: ItemFilters
    terms: tuple[Term, ...] = ()


@dataclass(frozen=True, slots=True)
class FactListing:
    """A listing: the facts passing `filters` and `items`, newest first by created_at
    (then insertion order) read as the page `offset`, `limit`; or, with
    `oldest_first`, every passing fact oldest first (`limit` None). `state`: which
    stored facts are looked at (`rules.chains.in_state`); every read but an
    inspector's `list(state=...)` asks for the live ones."""

    filters: Filters
    items: ItemFilters
    limit: int | None
    offset: int = 0
    oldest_first: bool = False
    state: FactState = "live"


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

    # -- writes: rows checked (and a batch merged by id) by the front ------------------

    def write(self, rows: Sequence[FactRow], *, embed: bool) -> None:
        """Upsert `rows` in one transaction, keyed facts placed in their chains; with
        `embed`, their vectors too (computed before the transaction)."""
        ...

    def remember(self, row: FactRow) -> str:
        """Merge `row` into the oldest live fact of the same text, layer and key (the id
        merged into), or store it (its id)."""
        ...

    def supersede(self, old_id: str, row: FactRow) -> str:
        """Store `row` right after `old_id` in that fact's chain; `FactNotFoundError` for
        an unknown `old_id`."""
        ...

    def promote(self, fact_id: str, layer: str) -> Fact | None:
        """Move an unexpired fact to `layer` (into its key's chain there); None when there
        is no such fact."""
        ...

    def promote_eligible(self, params: dict[str, Any]) -> list[str]:
        """`rules.items.promotion`'s params: the ids moved, oldest first."""
        ...

    def expire(self) -> int:
        """Delete the expired facts; how many."""
        ...

    def delete(self, ids: Sequence[str]) -> int:
        """Delete these facts (expired ones too); how many were stored."""
        ...

    # -- reads: live facts only, `get` and history aside ---------------------------------

    def get(self, fact_id: str) -> Fact | None:
        """The fact, superseded or not, unless it expired."""
        ...

    def count(self) -> int: ...

    def history_of_key(self, key: str) -> list[Fact]:
        """The key's facts of every layer, unexpired, oldest first by valid time."""
        ...

    def history_of_fact(self, fact_id: str) -> list[Fact]:
        """The chain of the fact in its layer (the fact alone when in none; [] when
        unknown), unexpired, oldest first by valid time."""
        ...

    def ranked(self, query: FactQuery) -> list[Fact]:
        """Modes "any", "all" and "raw": the best `query.limit` by BM25, `score` filled."""
        ...

    def semantic(self, query: FactQuery) -> list[Fact]:
        """Modes "vector" and "hybrid" (only asked with an embedder)."""
        ...

    def listed(self, listing: FactListing) -> list[Fact]:
        """The facts of `listing`; expired and superseded ones only when its `state`
        asks for them."""
        ...

    def tags(self) -> dict[str, int]:
        """Each tag of the live facts with its count, sorted by tag."""
        ...

    def categories(self) -> list[str]:
        """The live facts' non-empty categories, sorted."""
        ...
