"""`build_memory_pack`: golemcore's memory pack (SPEC 13), over any `FactStore`s.

What goes back into the prompt is chosen in three steps:

1. Candidates, per layer and per store: the store's best `4 * top_k[layer]` matches of the
   query in that layer (filters before ranking, so a layer is never crowded out by
   another), or with an empty query the layer's newest items.
2. Scores: relevance (the search score over its layer's best), salience, confidence and
   recency (`0.5 ** (age / half_life)` for layers that decay), weighted and normalised to
   [0, 1]. The same item held by several stores (same fingerprint) is kept once, with its
   best score. Each layer keeps its `top_k`; the picks merge by score.
3. Budget: items go in by score while the rendered text stays within the soft budget;
   past it, only items scoring at least `overflow_min_score` get in, up to the hard one.
   An item that does not fit is skipped and the next one is tried, so a long item never
   blocks the short ones after it. The budget is measured on the whole rendered text, as
   in `inject_memory` (tokenizers are not additive across pieces).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..errors import InvalidArgumentError
from ..protocols import FactStore
from ..records import Fact
from ..rules.encoding import dt_to_ms
from .inject import bullet, search_mode_for, stores_of
from .pack_config import LAYER_ORDER, PackConfig
from .tokens import estimate_tokens

__all__ = ["MemoryPack", "PackItem", "build_memory_pack", "render"]

_DAY_MS = 86_400_000
_PAGE = 500  # list() page size when scanning a layer for its newest items
_TITLES = {"semantic": "Semantic", "procedural": "Procedural", "episodic": "Episodic"}


@dataclass(frozen=True)
class PackItem:
    """One selected item: the fact, its layer, its score and two of the score's parts."""

    fact: Fact
    layer: str
    score: float
    relevance: float
    recency: float


@dataclass(frozen=True)
class MemoryPack:
    """The items in render order, the rendered `text` ("" when empty), its `tokens`, and
    `diagnostics` (candidates and selected per layer, skipped_for_budget, ...)."""

    items: tuple[PackItem, ...]
    text: str
    tokens: int
    diagnostics: dict[str, Any] = field(default_factory=dict)


def build_memory_pack(
    store: FactStore | Sequence[FactStore],
    query: str,
    config: PackConfig | None = None,
    *,
    now: datetime | None = None,
) -> MemoryPack:
    """The memory pack for `query` from one store or several (SPEC 13)."""
    stores = stores_of(store)
    if not isinstance(query, str):
        raise InvalidArgumentError(f"query must be a str, not {type(query).__name__}")
    if config is None:
        config = PackConfig()
    elif not isinstance(config, PackConfig):
        raise InvalidArgumentError("config must be a PackConfig or None")
    now_ms = _now_ms(now)
    weights = config.normalised_weights()
    candidates: dict[str, int] = {}
    picked: list[PackItem] = []
    dropped = 0
    for layer in LAYER_ORDER:
        top_k = config.top_k.get(layer, 0)
        if top_k <= 0:
            continue
        found = [f for s in stores for f in _candidates(s, query, layer, 4 * top_k, config)]
        candidates[layer] = len(found)
        kept = [f for f in found if f.confidence >= config.min_confidence]
        dropped += len(found) - len(kept)
        scored = _scored(kept, layer, config, weights, now_ms)
        picked.extend(sorted(scored, key=_order)[:top_k])
    merged = _unique(sorted(picked, key=_order))
    chosen, skipped = _fill(merged, config)
    items = tuple(i for layer in LAYER_ORDER for i in chosen if i.layer == layer)
    text = render(items)
    estimate = config.estimator or estimate_tokens
    return MemoryPack(
        items=items,
        text=text,
        tokens=estimate(text) if text else 0,
        diagnostics={
            "candidates": candidates,
            "selected": {layer: sum(i.layer == layer for i in items) for layer in candidates},
            "skipped_for_budget": skipped,
            "below_min_confidence": dropped,
            "duplicates": len(picked) - len(merged),
            "stores": len(stores),
        },
    )


def render(items: Sequence[PackItem], bullets: dict[int, str] | None = None) -> str:
    """The pack's text: `# Memory`, then one section per layer in LAYER_ORDER.
    `bullets`: each item's rendered line by `id(item)`, when the caller has them."""
    if not items:
        return ""
    parts = ["# Memory\n"]
    for layer in LAYER_ORDER:
        lines = [
            bullets[id(i)] if bullets is not None else bullet(i.fact.content)
            for i in items
            if i.layer == layer
        ]
        if lines:
            parts.append(f"\n## {_TITLES[layer]}\n")
            parts.extend(lines)
    return "".join(parts)


def _now_ms(now: datetime | None) -> int:
    if now is None:
        return dt_to_ms(datetime.now(timezone.utc))
    if not isinstance(now, datetime):
        raise InvalidArgumentError(f"now must be a datetime or None, not {type(now).__name__}")
    if now.tzinfo is None:  # naive means UTC, as for created_at
        now = now.replace(tzinfo=timezone.utc)
    return dt_to_ms(now)


def _candidates(
    store: FactStore, query: str, layer: str, want: int, config: PackConfig
) -> list[Fact]:
    """A store's candidates in one layer: the best `want` matches, or the newest."""
    floor = config.min_confidence
    if query.strip():
        mode = search_mode_for(store)
        return store.search(query, top_k=want, mode=mode, layer=layer, min_confidence=floor)
    # list() pages by created_at; "newest" here means by updated_at, so read the layer
    # through and keep the newest `want` (a heap, never the whole layer in memory).
    newest: list[tuple[int, str, Fact]] = []
    offset = 0
    while True:
        page = store.list(layer=layer, min_confidence=floor, limit=_PAGE, offset=offset)
        for fact in page:
            entry = (_ms(fact.updated_at), fact.id, fact)
            if len(newest) < want:
                heapq.heappush(newest, entry)
            elif entry[:2] > newest[0][:2]:
                heapq.heapreplace(newest, entry)
        if len(page) < _PAGE:
            break
        offset += _PAGE
    unique = {fact.id: fact for _, _, fact in newest}  # pages may overlap under writes
    return list(unique.values())


def _scored(
    found: list[Fact], layer: str, config: PackConfig, weights: dict[str, float], now_ms: int
) -> list[PackItem]:
    best = max((f.score for f in found if f.score is not None), default=None)
    half_life = config.half_life_days.get(layer)  # type: ignore[call-overload]
    items = []
    for fact in found:
        if fact.score is None or best is None or best <= 0:
            relevance = 1.0
        else:
            relevance = min(1.0, max(0.0, fact.score / best))
        if half_life is None:
            recency = 1.0
        else:
            age_days = max(0, now_ms - _ms(fact.updated_at)) / _DAY_MS
            recency = math.pow(0.5, age_days / half_life)
        score = (
            weights["relevance"] * relevance
            + weights["salience"] * fact.salience
            + weights["confidence"] * fact.confidence
            + weights["recency"] * recency
        )
        items.append(PackItem(fact, layer, min(1.0, max(0.0, score)), relevance, recency))
    return items


def _order(item: PackItem) -> tuple[float, float, int, str]:
    """Best first: score, then higher salience, then newer (then id, for a stable order)."""
    fact = item.fact
    return (-item.score, -fact.salience, -_ms(fact.updated_at), fact.id)


def _unique(items: list[PackItem]) -> list[PackItem]:
    """The first (best) of each fingerprint: one item held by several stores, or in two
    layers, appears once."""
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.fact.fingerprint or f"id:{item.fact.id}"
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _fill(items: list[PackItem], config: PackConfig) -> tuple[list[PackItem], int]:
    estimate = config.estimator or estimate_tokens
    bullets = {id(item): bullet(item.fact.content) for item in items}  # each line once
    chosen: list[PackItem] = []
    skipped = 0
    for item in items:
        trial = [*chosen, item]
        tokens = estimate(render(trial, bullets))  # render groups by layer, keeping order
        fits_soft = tokens <= config.soft_budget_tokens
        fits_overflow = item.score >= config.overflow_min_score and (
            tokens <= config.max_budget_tokens
        )
        if fits_soft or fits_overflow:
            chosen = trial
        else:
            skipped += 1
    return chosen, skipped


def _ms(value: datetime | None) -> int:
    return 0 if value is None else dt_to_ms(value)
