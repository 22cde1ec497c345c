"""What an embedder must look like, checked before anything is opened, and which of its
methods embeds a query.

Apart from the vector code on purpose: opening a store without an embedder must not load
numpy (tests/unit/test_import_time.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from ..errors import InvalidArgumentError

if TYPE_CHECKING:
    from ..protocols import QueryEmbedder

__all__ = ["check_embedder", "embed_queries", "has_query_side"]


def check_embedder(embedder: Any) -> Any:
    """`embedder` if it looks like an `Embedder` (a non-empty str `model` and an `embed`
    method), else InvalidArgumentError; None passes (no vectors)."""
    if embedder is None:
        return None
    model = getattr(embedder, "model", None)
    if not isinstance(model, str) or not model or not callable(getattr(embedder, "embed", None)):
        raise InvalidArgumentError(
            "embedder must have a non-empty str `model` and an `embed(texts)` method "
            "(see sqlmem.Embedder)"
        )
    query_side = getattr(embedder, "embed_query", None)
    if query_side is not None and not callable(query_side):
        raise InvalidArgumentError(
            "embedder.embed_query must be a method (see sqlmem.QueryEmbedder)"
        )
    return embedder


def has_query_side(embedder: object) -> TypeGuard[QueryEmbedder]:
    """Whether `embedder` embeds queries its own way (`QueryEmbedder`): the one place that
    decides it, so no search path probes for `embed_query` by itself."""
    from ..protocols import QueryEmbedder

    return isinstance(embedder, QueryEmbedder)


def embed_queries(embedder: Any, texts: Sequence[str]) -> Any:
    """The vectors of search queries: `embed_query` when the embedder has one (asymmetric
    models want a query prefix that stored texts must not get), else `embed`."""
    if has_query_side(embedder):
        return embedder.embed_query(texts)
    return embedder.embed(texts)
