"""`FactCandidate`: a memory pack's candidate, as a backend hands it to the pack.

Why a record of its own: a pack reads a few fields of many candidates (score parts, id,
fingerprint, content) and keeps few of them, so a backend that can (the SQLite store's
layered search) passes its stored rows along without building a `Fact` for each; the
pack reads named fields, never column positions, and `materialize` builds the `Fact`s of
the kept candidates only, in one call per kind of row. Candidates from a protocol search
carry their `Fact` from the start.

The pack sets `score`, `relevance` and `recency` on the candidates it scores: the record
is the pack's working object too, so a candidate costs one small object.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..records import Fact
from .encoding import dt_to_ms
from .rows import facts_from_rows

__all__ = ["FactCandidate", "materialize"]


class FactCandidate:
    """One candidate fact of one layer: what scoring, ordering and filling read.

    `search_score`: the store's relevance (higher is better), None without a query;
    `updated_ms`: its last update, in ms since the epoch; `key`: what makes two
    candidates the same item (its fingerprint, else its id). `fact` is the `Fact`, or
    None until `materialize` builds it from `row` (a stored-fact row in the layout of
    `rules.rows.facts_from_rows`, its bm25 last when `ranked`).
    """

    __slots__ = (
        "confidence", "content", "fact", "id", "key", "layer", "ranked", "recency",
        "relevance", "row", "salience", "score", "search_score", "updated_ms",
    )  # fmt: skip

    def __init__(
        self,
        layer: str,
        search_score: float | None,
        salience: float,
        confidence: float,
        updated_ms: int,
        fact_id: str,
        fingerprint: str | None,
        content: str,
        *,
        fact: Fact | None = None,
        row: Sequence[Any] | None = None,
        ranked: bool = False,
    ) -> None:
        self.layer = layer
        self.search_score = search_score
        self.salience = salience
        self.confidence = confidence
        self.updated_ms = updated_ms
        self.id = fact_id
        self.key = fingerprint or f"id:{fact_id}"
        self.content = content
        self.fact = fact
        self.row = row
        self.ranked = ranked
        self.score = self.relevance = self.recency = 0.0

    @classmethod
    def of_fact(cls, layer: str, fact: Fact) -> FactCandidate:
        """A candidate from a protocol search (or list) result."""
        updated = 0 if fact.updated_at is None else dt_to_ms(fact.updated_at)
        return cls(
            layer, fact.score, fact.salience, fact.confidence, updated, fact.id,
            fact.fingerprint, fact.content, fact=fact,
        )  # fmt: skip

    def __repr__(self) -> str:
        return f"<FactCandidate {self.layer} {self.id!r} score={self.score:.3f}>"


def materialize(candidates: Sequence[FactCandidate]) -> list[Fact]:
    """The candidates' `Fact`s, in order: rows become Facts (unvalidated, the store
    wrote them) here only, for the few candidates kept."""
    for ranked in (True, False):
        group = [c for c in candidates if c.fact is None and c.ranked is ranked]
        if not group:
            continue
        rows = [c.row for c in group if c.row is not None]
        if len(rows) != len(group):
            raise ValueError("a candidate without a Fact must carry its stored row")
        for c, fact in zip(group, facts_from_rows(rows, ranked=ranked), strict=True):
            c.fact = fact
    facts = [c.fact for c in candidates if c.fact is not None]
    assert len(facts) == len(candidates)
    return facts
