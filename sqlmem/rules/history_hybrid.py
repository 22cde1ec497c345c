"""Vector and hybrid history search, the same on every backend: each backend supplies its
two legs (BM25 "any" and cosine, the session filter applied inside both), this fuses them
with the fact stores' reciprocal rank fusion (`search.vectors.reciprocal_rank_fusion`), so
the fusion constant and the tie rule live in one place for facts and messages alike.

A message is identified across the legs by (session_id, seq), unique in a database.
"""

from __future__ import annotations

from collections.abc import Callable

from ..records import Message
from ..search.vectors import Vector, hybrid_leg_size, reciprocal_rank_fusion

__all__ = ["fuse_messages", "semantic_messages"]

MessageKey = tuple[str, int]


def _key(message: Message) -> MessageKey:
    return (message.session_id or "", message.seq or 0)


def fuse_messages(lexical: list[Message], semantic: list[Message], top_k: int) -> list[Message]:
    """The fused best `top_k`, each message once, `score` the fused value; a message only
    BM25 found (no vector yet) takes part through its BM25 rank alone."""
    by_key = {_key(m): m for m in semantic}
    by_key.update((_key(m), m) for m in lexical)
    fused = reciprocal_rank_fusion([_key(m) for m in lexical], [_key(m) for m in semantic], top_k)
    return [by_key[key].model_copy(update={"score": score}) for key, score in fused]


def semantic_messages(
    mode: str,
    limit: int,
    query_vector: Vector | None,
    vector_leg: Callable[[Vector, int], list[Message]],
    lexical_leg: Callable[[int], list[Message]],
) -> list[Message]:
    """Modes "vector" and "hybrid": the vector leg (nothing without a usable query vector),
    `max(4 * top_k, 50)` deep for hybrid, fused with the BM25 leg of the same depth."""
    wanted = hybrid_leg_size(limit) if mode == "hybrid" else limit
    semantic = vector_leg(query_vector, wanted) if query_vector is not None else []
    if mode == "vector":
        return semantic
    return fuse_messages(lexical_leg(wanted), semantic, limit)
