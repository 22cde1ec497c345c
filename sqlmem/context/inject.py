"""Rendering the facts relevant to a query as a block for the next prompt.

The block is Markdown an LLM reads well and a person can eyeball in a log:

    ## Relevant Memory

    - The user's dog is called Rex
    - The user lives in Lisbon

Facts go in the store's rank order. With several stores (an agent's and a shared scope's)
their rankings are interleaved, each store's best first, and an item held by several
appears once; with an embedder on the store, search is hybrid, so "what do I eat?" finds
"The user is vegetarian.". The budget is measured on the whole rendered block (header
included) with the estimator, because a real tokenizer is not additive across pieces.
Filling stops at the first fact that would overflow: a later, smaller fact is not tried,
so a less relevant fact never displaces a more relevant one from the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import zip_longest
from typing import Literal, cast

from ..errors import InvalidArgumentError
from ..protocols import FactStore, HistoryStore, has_vector_search
from ..records import Fact
from ..rules.async_guard import refuse_async
from .tokens import Estimator, estimate_tokens

__all__ = ["MEMORY_HEADER", "bullet", "inject_memory", "search_mode_for", "stores_of"]

MEMORY_HEADER = "## Relevant Memory\n\n"


def bullet(content: str) -> str:
    """One list item. Line breaks (any `str.splitlines` separator) become single spaces,
    and blank lines vanish, so a multi-line fact cannot end the list or start a new
    heading in the middle of the block."""
    lines = (line.strip() for line in content.splitlines())
    return "- " + " ".join(line for line in lines if line) + "\n"


def search_mode_for(store: FactStore | HistoryStore) -> Literal["any", "hybrid"]:
    """Hybrid when the store (facts or history) has an embedder, else BM25 "any": the one
    rule by which packs, inject_memory and the tools decide to search by meaning."""
    return "hybrid" if has_vector_search(store) else "any"


def inject_memory(
    store: FactStore | Sequence[FactStore],
    query: str,
    *,
    max_facts: int = 10,
    max_tokens: int = 2000,
    estimator: Estimator | None = None,
) -> str:
    """The memory block for `query`, or `""` when nothing matches or nothing fits.

    `""` also for a blank query and for `max_facts` or `max_tokens` of 0 or less, so the
    result can be concatenated into a prompt unconditionally.
    """
    refuse_async(store, "inject_memory", "sqlmem.aio.inject_memory")
    if not isinstance(query, str):
        raise InvalidArgumentError(f"query must be a str, not {type(query).__name__}")
    for name, value in (("max_facts", max_facts), ("max_tokens", max_tokens)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidArgumentError(f"{name} must be an int, not {type(value).__name__}")
    if estimator is not None and not callable(estimator):
        raise InvalidArgumentError("estimator must be callable or None")
    if max_facts <= 0 or max_tokens <= 0 or not query.strip():
        return ""
    estimate = estimator or estimate_tokens
    block = MEMORY_HEADER
    used = 0
    for fact in _ranked(store, query, max_facts):
        candidate = block + bullet(fact.content)
        if estimate(candidate) > max_tokens:
            break
        block = candidate
        used += 1
    return block if used else ""


def stores_of(store: FactStore | Sequence[FactStore]) -> list[FactStore]:
    """One store or a sequence of them (an agent's and a shared scope's), checked."""
    if hasattr(store, "search"):
        return [cast(FactStore, store)]
    wrong = InvalidArgumentError(
        "store must be a FactStore (a database's .facts) or a non-empty sequence of them,"
        f" not {type(store).__name__}"
    )
    if isinstance(store, (str, bytes)) or not hasattr(store, "__iter__"):
        raise wrong
    stores = list(store)
    if not stores or not all(hasattr(s, "search") for s in stores):
        raise wrong
    return stores


def _ranked(store: FactStore | Sequence[FactStore], query: str, top_k: int) -> list[Fact]:
    """The best `top_k` of one store, or of several with their rankings interleaved (scores
    of different stores are not comparable: BM25 depends on each corpus)."""
    stores = stores_of(store)
    rankings = [s.search(query, top_k=top_k, mode=search_mode_for(s)) for s in stores]
    if len(rankings) == 1:
        return rankings[0]
    seen: set[str] = set()
    merged: list[Fact] = []
    for tier in zip_longest(*rankings):
        for fact in tier:
            if fact is None:
                continue
            key = fact.fingerprint or f"id:{fact.id}"
            if key not in seen:
                seen.add(key)
                merged.append(fact)
    return merged[:top_k]
