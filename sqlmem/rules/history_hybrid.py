"""Vector and hybrid history search, the same on every backend: each backend supplies its
two legs (BM25 "any" and cosine, the session filter applied inside both), this fuses them
with the fact stores' reciprocal rank fusion (`search.vectors.reciprocal_rank_fusion`), so
the fusion constant and the tie rule live in one place for facts and messages alike, and
then lifts each message by its neighbours in the conversation (`history_neighbours`).

A message is identified across the legs by (session_id, seq), unique in a database.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..records import Message
from ..search.embedding import Embedding
from ..search.vectors import Vector, hybrid_leg_size
from .checks import check_history_search
from .history_modes import needs_embedder_error
from .history_neighbours import MessageKey, rank_with_neighbours

__all__ = ["MessageVectorLeg", "fuse_messages", "search_by_meaning", "semantic_messages"]


class MessageVectorLeg(Protocol):
    """A backend's message vectors: the embedder they come from, and the cosine ranking of
    the messages (of one session when `session_id` is given)."""

    @property
    def embedding(self) -> Embedding: ...

    def search(self, query: Vector, limit: int, session_id: str | None) -> list[Message]: ...


def _key(message: Message) -> MessageKey:
    return (message.session_id or "", message.seq or 0)


def fuse_messages(lexical: list[Message], semantic: list[Message], top_k: int) -> list[Message]:
    """The best `top_k` by fused score lifted by the better neighbour's
    (`history_neighbours`), each message once, `score` the lifted value; a message only
    BM25 found (no vector yet) takes part through its BM25 rank alone."""
    by_key = {_key(m): m for m in semantic}
    by_key.update((_key(m), m) for m in lexical)
    ranked = rank_with_neighbours([_key(m) for m in lexical], [_key(m) for m in semantic], top_k)
    return [by_key[key].model_copy(update={"score": score}) for key, score in ranked]


def semantic_messages(
    mode: str,
    limit: int,
    query_vector: Vector | None,
    vector_leg: Callable[[Vector, int], list[Message]],
    lexical_leg: Callable[[int], list[Message]],
) -> list[Message]:
    """Modes "vector" and "hybrid": the vector leg (nothing without a usable query vector),
    `max(4 * top_k, 50)` deep for hybrid, fused with the BM25 leg of the same depth and
    lifted by the neighbours."""
    wanted = hybrid_leg_size(limit) if mode == "hybrid" else limit
    semantic = vector_leg(query_vector, wanted) if query_vector is not None else []
    if mode == "vector":
        return semantic
    return fuse_messages(lexical_leg(wanted), semantic, limit)


def search_by_meaning(
    enabled: bool,
    query: str,
    session_id: str | None,
    top_k: int,
    mode: str,
    vectors: MessageVectorLeg | None,
    lexical_leg: Callable[[int], list[Message]],
) -> list[Message]:
    """`HistoryStore.search` in modes "vector" and "hybrid", for every backend: the
    arguments checked as in mode "any", refused without an embedder, the query embedded
    before any read (no lock held), then the two legs fused and lifted by the neighbours."""
    limit = check_history_search(enabled, query, session_id, top_k)
    if vectors is None:
        raise needs_embedder_error(f"search mode={mode!r}")
    if limit <= 0 or not query.strip():
        return []
    return semantic_messages(
        mode,
        limit,  # check_limit clamped it to what SQLite binds
        vectors.embedding.query(query),
        lambda vector, wanted: vectors.search(vector, wanted, session_id),
        lexical_leg,
    )
