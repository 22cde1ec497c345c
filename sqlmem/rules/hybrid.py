"""Vector and hybrid search rules every fact store shares (SPEC 17): the arguments, and the
fusion of the BM25 and vector rankings into one list."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import InvalidArgumentError
from ..records import Fact
from ..search.vectors import Vector, hybrid_leg_size, reciprocal_rank_fusion
from .filters import Filters, check_limit, check_query, make_filters
from .items import ItemFilters, make_item_filters

__all__ = ["check_batch_size", "check_semantic", "filter_args", "fuse", "semantic_search"]


def filter_args(
    tags: Any,
    category: Any,
    source: Any,
    since: Any,
    until: Any,
    metadata: Any,
    layer: Any,
    kind: Any,
    min_confidence: Any,
) -> dict[str, Any]:
    """A search's filters by name, as both legs of a hybrid search pass them on."""
    return {
        "tags": tags,
        "category": category,
        "source": source,
        "since": since,
        "until": until,
        "metadata": metadata,
        "layer": layer,
        "kind": kind,
        "min_confidence": min_confidence,
    }


def check_semantic(
    query: object, top_k: object, mode: object, filter_args: dict[str, Any]
) -> tuple[str, int, Filters, ItemFilters]:
    """The checked arguments of a vector or hybrid search, refused alike by every store."""
    text = check_query(query, mode)
    limit = check_limit(top_k, "top_k")
    filters = make_filters(
        filter_args["tags"],
        filter_args["category"],
        filter_args["source"],
        filter_args["since"],
        filter_args["until"],
        filter_args["metadata"],
    )
    item_filters = make_item_filters(
        filter_args["layer"],
        filter_args["kind"],
        filter_args["min_confidence"],
        filter_args.get("as_of"),
    )
    return text, limit, filters, item_filters


def check_batch_size(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"batch_size must be an int >= 1, got {value!r}")
    return value


def fuse(lexical: list[Fact], semantic: list[Fact], top_k: int) -> list[Fact]:
    """Reciprocal rank fusion of the two legs (`search.vectors`), each fact once, `score`
    the fused value; a fact only BM25 found takes part through its BM25 rank alone."""
    by_id = {f.id: f for f in semantic}
    by_id.update((f.id, f) for f in lexical)
    fused = reciprocal_rank_fusion([f.id for f in lexical], [f.id for f in semantic], top_k)
    return [by_id[fact_id].model_copy(update={"score": score}) for fact_id, score in fused]


def semantic_search(
    mode: str,
    limit: int,
    query_vector: Vector | None,
    vector_leg: Callable[[Vector, int], list[Fact]],
    lexical_leg: Callable[[int], list[Fact]],
) -> list[Fact]:
    """Modes "vector" and "hybrid" the same way on every backend: the vector leg (none
    without a usable query vector), `max(4 * top_k, 50)` deep for hybrid, fused with the
    BM25 "any" leg of the same depth. Each backend supplies its two legs, filters applied
    inside them."""
    wanted = hybrid_leg_size(limit) if mode == "hybrid" else limit
    semantic = vector_leg(query_vector, wanted) if query_vector is not None else []
    if mode == "vector":
        return semantic
    return fuse(lexical_leg(wanted), semantic, limit)
