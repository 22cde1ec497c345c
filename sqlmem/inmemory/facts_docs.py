"""One stored fact of the in-memory store (`FactDoc`), as the SQLite row holds it plus its
tokens, with the visibility and filter tests every read of that store applies: expiry
(`rules.items.is_live`), valid time (`rules.chains.is_valid`) and the filters' own
predicates (`Filters.accepts`, `ItemFilters.accepts`), so the twin reads what SQL reads.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..records import Fact
from ..rules.chains import in_state, is_valid
from ..rules.filters import FactRow, Filters
from ..rules.items import ItemFilters, is_live
from ..rules.rows import build_fact
from ..search.bm25 import occurrences
from ..search.query import Term

if TYPE_CHECKING:
    from ..protocols import FactState

__all__ = ["FactDoc"]


@dataclass
class FactDoc:
    """One stored fact, as the SQLite row holds it, plus its tokens."""

    pk: int
    row: FactRow
    created_ms: int
    updated_ms: int
    tag_set: frozenset[str]
    meta: dict[str, Any]
    tokens: tuple[str, ...]
    counts: Counter[str]
    hits: int
    #: Unit vector of the content under the store's embedder, or None.
    vector: Any = None
    #: Its chain and link (`sqlmem.inmemory.chains`), as the SQLite row holds them.
    chain: str | None = None
    valid_from: int | None = None
    valid_to: int | None = None
    superseded_by: str | None = None

    def fact(self, score: float | None = None) -> Fact:
        r = self.row
        return build_fact(
            r.id,
            r.content,
            r.source,
            r.category,
            r.tags,
            r.metadata,
            self.created_ms,
            self.updated_ms,
            r.layer,
            r.kind,
            r.confidence,
            r.salience,
            r.refs,
            r.expires_ms,
            r.fingerprint,
            self.hits,
            score,
            r.key,
            self.valid_from,
            self.valid_to,
            self.superseded_by,
        )

    def accepted_by(self, filters: Filters, items: ItemFilters, now: int) -> bool:
        r = self.row
        as_of = items.as_of_ms
        return (
            is_live(r.expires_ms, now)
            and is_valid(
                self.valid_from,
                self.created_ms,
                self.valid_to,
                now if as_of is None else as_of,
                as_of=as_of is not None,
            )
            and filters.accepts(self.tag_set, r.category, r.source, self.created_ms, self.meta)
            and items.accepts(r.layer, r.kind, r.confidence)
        )

    def listed_in(self, filters: Filters, items: ItemFilters, now: int, state: FactState) -> bool:
        """`accepted_by` for a listing of any state (`rules.chains.in_state`)."""
        if state == "live":
            return self.accepted_by(filters, items, now)
        r = self.row
        return (
            in_state(
                state, r.expires_ms, self.valid_from, self.created_ms, self.valid_to, now,
                items.as_of_ms,
            )
            and filters.accepts(self.tag_set, r.category, r.source, self.created_ms, self.meta)
            and items.accepts(r.layer, r.kind, r.confidence)
        )  # fmt: skip

    def live(self, now: int) -> bool:
        """Visible to reads of now: not expired, valid now."""
        return is_live(self.row.expires_ms, now) and is_valid(
            self.valid_from, self.created_ms, self.valid_to, now, as_of=False
        )

    def unexpired(self, now: int) -> bool:
        """Visible to `get`, history and export (superseded facts too)."""
        return is_live(self.row.expires_ms, now)

    def tf(self, term: Term) -> int:
        """Occurrences of the term's tokens as a consecutive run (overlaps count)."""
        return occurrences(self.tokens, term.tokens, self.counts)
