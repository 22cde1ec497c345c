"""`build_memory_pack`: the memory pack, over any `FactStore`s.

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
   in `inject_memory` (tokenizers are not additive across pieces). With the default
   estimator the count of each trial is summed from its pieces' counts, which is exact for
   it (`tokens.dense_count`); a custom estimator sees each trial's whole text.

Cost: a store with the `LayeredSearch` capability (the SQLite store, lexically) gives
every layer's candidates from one ranked statement as `FactCandidate`s over its stored
rows (`sqlmem.sqlite.stores.pack_search`), and only the items kept become `Fact`s; other stores
(the twin, PostgreSQL, hybrid search) take one protocol search per layer. Both paths give
the same pack (tests/unit/test_pack_layered.py). W8: ~2x one raw OR query at 100,000
facts, was ~5-9x.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..errors import InvalidArgumentError
from ..protocols import FactStore, has_layered_search
from ..records import Fact
from ..rules.async_guard import refuse_async
from ..rules.candidates import FactCandidate, materialize
from ..rules.encoding import dt_to_ms
from .inject import bullet, search_mode_for, stores_of
from .pack_config import LAYER_ORDER, PackConfig
from .tokens import CHARS_PER_TOKEN, dense_count, estimate_tokens

__all__ = ["MemoryPack", "PackItem", "build_memory_pack", "render"]

_DAY_MS = 86_400_000
_PAGE = 500  # list() page size when scanning a layer for its newest items
_TITLES = {"semantic": "Semantic", "procedural": "Procedural", "episodic": "Episodic"}
_TITLE = "# Memory\n"
_HEADINGS = {layer: "\n## " + title + "\n" for layer, title in _TITLES.items()}


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
    """The memory pack for `query` from one store or several."""
    refuse_async(store, "build_memory_pack", "sqlmem.aio.build_memory_pack")
    stores = stores_of(store)
    if not isinstance(query, str):
        raise InvalidArgumentError(f"query must be a str, not {type(query).__name__}")
    if config is None:
        config = PackConfig()
    elif not isinstance(config, PackConfig):
        raise InvalidArgumentError("config must be a PackConfig or None")
    now_ms = _now_ms(now)
    weights = config.normalised_weights()
    top_k: dict[str, int] = {str(layer): n for layer, n in config.top_k.items()}
    wants: dict[str, int] = {
        layer: 4 * top_k[layer] for layer in LAYER_ORDER if top_k.get(layer, 0) > 0
    }
    found: dict[str, list[_Candidate]] = {layer: [] for layer in wants}
    for s in stores:
        for layer, cands in _store_candidates(s, query, wants, config).items():
            found[layer].extend(cands)
    candidates: dict[str, int] = {}
    picked: list[_Candidate] = []
    dropped = 0
    for layer, cands in found.items():
        candidates[layer] = len(cands)
        kept = [c for c in cands if c.confidence >= config.min_confidence]
        dropped += len(cands) - len(kept)
        _score(kept, config.half_life_days.get(layer), weights, now_ms)  # type: ignore[call-overload]
        kept.sort(key=_order)
        picked.extend(kept[: top_k[layer]])
    merged = _unique(sorted(picked, key=_order))
    chosen, skipped = _fill(merged, config)
    chosen = [c for layer in LAYER_ORDER for c in chosen if c.layer == layer]
    items = _pack_items(chosen)
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
    parts = [_TITLE]
    for layer in LAYER_ORDER:
        lines = [
            bullets[id(i)] if bullets is not None else bullet(i.fact.content)
            for i in items
            if i.layer == layer
        ]
        if lines:
            parts.append(_HEADINGS[layer])
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


_Candidate = FactCandidate  # the pack's working object: scored in place


def _store_candidates(
    store: FactStore, query: str, wants: dict[str, int], config: PackConfig
) -> dict[str, list[_Candidate]]:
    """One store's candidates per layer: its layered search when it has one (the
    SQLite store: one ranked statement for every layer), else one search per layer."""
    if search_mode_for(store) == "any" and has_layered_search(store):
        return store.layered_candidates(query, wants, min_confidence=config.min_confidence)
    return {
        layer: [
            FactCandidate.of_fact(layer, f) for f in _candidates(store, query, layer, want, config)
        ]
        for layer, want in wants.items()
    }


def _pack_items(chosen: list[_Candidate]) -> tuple[PackItem, ...]:
    """The selected candidates as PackItems, their Facts built only now."""
    facts = materialize(chosen)
    return tuple(
        PackItem(fact, c.layer, c.score, c.relevance, c.recency)
        for c, fact in zip(chosen, facts, strict=True)
    )


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


def _score(
    found: list[_Candidate], half_life: float | None, weights: dict[str, float], now_ms: int
) -> None:
    """Sets each candidate's relevance, recency and score."""
    best = max((c.search_score for c in found if c.search_score is not None), default=None)
    w_rel, w_sal = weights["relevance"], weights["salience"]
    w_conf, w_rec = weights["confidence"], weights["recency"]
    for c in found:
        score = c.search_score
        if score is None or best is None or best <= 0:
            relevance = 1.0
        else:
            relevance = min(1.0, max(0.0, score / best))
        if half_life is None:
            recency = 1.0
        else:
            age_days = max(0, now_ms - c.updated_ms) / _DAY_MS
            recency = math.pow(0.5, age_days / half_life)
        total = w_rel * relevance + w_sal * c.salience + w_conf * c.confidence + w_rec * recency
        c.score, c.relevance, c.recency = min(1.0, max(0.0, total)), relevance, recency


def _order(c: _Candidate) -> tuple[float, float, int, str]:
    """Best first: score, then higher salience, then newer (then id, for a stable order)."""
    return (-c.score, -c.salience, -c.updated_ms, c.id)


def _unique(items: list[_Candidate]) -> list[_Candidate]:
    """The first (best) of each fingerprint: one item held by several stores, or in two
    layers, appears once."""
    seen: set[str] = set()
    out = []
    for item in items:
        if item.key not in seen:
            seen.add(item.key)
            out.append(item)
    return out


def _fill(items: list[_Candidate], config: PackConfig) -> tuple[list[_Candidate], int]:
    """Items in order while the rendered text stays within the soft budget, past it the
    ones scoring at least `overflow_min_score` within the max budget; the rest skipped.
    Every trial is measured on the whole text it would render."""
    lines = [bullet(c.content) for c in items]  # each line once
    if config.estimator is None or config.estimator is estimate_tokens:
        tokens_with = _counted_text(items, lines)
    else:
        tokens_with = _rendered_text(items, lines, config.estimator)
    chosen: list[_Candidate] = []
    skipped = 0
    for index, item in enumerate(items):
        tokens, accept = tokens_with(index)
        fits_soft = tokens <= config.soft_budget_tokens
        fits_overflow = item.score >= config.overflow_min_score and (
            tokens <= config.max_budget_tokens
        )
        if fits_soft or fits_overflow:
            chosen.append(item)
            accept()
        else:
            skipped += 1
    return chosen, skipped


TrialCounter = Callable[[int], tuple[int, Callable[[], None]]]


def _counted_text(items: list[_Candidate], lines: list[str]) -> TrialCounter:
    """`estimate_tokens` of the text with one more item, without rendering it: its
    counts (characters, and dense ones at a token each) add up over the text's pieces
    (the title, each section heading, each line), so the count is exact."""
    state = [len(_TITLE), 0]  # characters and dense characters of the chosen text
    headed: set[str] = set()

    def trial(index: int) -> tuple[int, Callable[[], None]]:
        line, layer = lines[index], items[index].layer
        chars = len(line) + (0 if layer in headed else len(_HEADINGS[layer]))
        dense = dense_count(line)
        total, total_dense = state[0] + chars, state[1] + dense
        tokens = total_dense + math.ceil((total - total_dense) / CHARS_PER_TOKEN)

        def accept() -> None:
            state[0], state[1] = total, total_dense
            headed.add(layer)

        return tokens, accept

    return trial


def _rendered_text(
    items: list[_Candidate], lines: list[str], estimate: Callable[[str], int]
) -> TrialCounter:
    """A custom estimator sees the whole rendered text of each trial (tokenizers are
    not additive across pieces)."""
    chosen: list[int] = []

    def trial(index: int) -> tuple[int, Callable[[], None]]:
        trial_set = [*chosen, index]
        parts = [_TITLE]
        for layer in LAYER_ORDER:
            section = [lines[i] for i in trial_set if items[i].layer == layer]
            if section:
                parts.append(_HEADINGS[layer])
                parts.extend(section)
        return estimate("".join(parts)), lambda: chosen.append(index)

    return trial


def _ms(value: datetime | None) -> int:
    return 0 if value is None else dt_to_ms(value)
