"""The in-memory history twin's message vectors: the SQLite store's rules
(`sqlmem.sqlite.stores.message_vectors`) over the twin's sessions.

A stored message (`history._Stored`) carries its unit vector (or None) and its insertion
order over the whole store; equal cosines rank by that order, as SQLite ranks them by the
message's rowid, so the two agree exactly. The model runs before the store's lock is taken
(`vectors_for`, `TwinVectors.embed_pending`), never under it. numpy loads only with an
embedder: nothing here imports it at module level.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..records import Message
from ..rules.history_modes import message_needs_vector, vector_text

if TYPE_CHECKING:
    from ..search.embedding import Embedding
    from ..search.vectors import Vector

__all__ = ["TwinVectors", "pending_vectors", "vectors_for"]


def vectors_for(
    embedding: Embedding | None, items: Sequence[Message], *, run_model: bool = True
) -> list[Any]:
    """A vector (or None) per message about to be stored, computed before the lock (the
    embedding's content-hash cache spares repeated texts; `run_model=False`: only what the
    cache knows)."""
    out: list[Any] = [None] * len(items)
    if embedding is None:
        return out
    wanted = [i for i, m in enumerate(items) if message_needs_vector(m.content)]
    if wanted:
        found = embedding.vectors([stored_text(items[i]) for i in wanted], run_model=run_model)
        for i, vector in zip(wanted, found, strict=True):
            out[i] = vector
    return out


def stored_text(message: Message) -> str:
    """What a stored message's vector is of (`rules.history_modes.vector_text`)."""
    return vector_text(message.content, message.name, message.created_at)


def pending_vectors(sessions: Mapping[str, Any]) -> list[Any]:
    """The stored messages with text and no vector, in insertion order (call under the
    store's lock)."""
    found = [
        s
        for session in sessions.values()
        for s in session.messages
        if s.vector is None and message_needs_vector(s.message.content)
    ]
    found.sort(key=_order_of)
    return found


@dataclass(frozen=True)
class TwinVectors:
    """The twin's vector leg (`rules.history_hybrid.MessageVectorLeg`) and filler."""

    embedding: Embedding
    store: Any  # the InMemoryHistoryStore: its `_lock` and `_sessions`

    def search(self, query: Vector, limit: int, session_id: str | None) -> list[Message]:
        """Exact cosine over the messages (of the session) with a vector of the query's
        dimension, in insertion order so equal cosines rank as on SQLite."""
        import numpy as np

        from ..search.vectors import rank_by_cosine

        with self.store._lock:
            sessions = self.store._sessions
            if session_id is None:
                pool = [s for session in sessions.values() for s in session.messages]
            else:
                pool = list(sessions[session_id].messages) if session_id in sessions else []
            docs = [s for s in pool if s.vector is not None and s.vector.shape == query.shape]
            if not docs:
                return []
            docs.sort(key=_order_of)
            best = rank_by_cosine(np.stack([d.vector for d in docs]), query, limit)
            return [
                docs[i].message.model_copy(update={"score": cosine}, deep=True)
                for i, cosine in best
            ]

    def embed_pending(self, batch_size: int, progress: Callable[[int, int], object] | None) -> int:
        """Fill the missing vectors a batch at a time, the model outside the lock."""
        from ..rules.hybrid import check_batch_size

        size = check_batch_size(batch_size)
        with self.store._lock:
            pending = pending_vectors(self.store._sessions)
        done = 0
        for start in range(0, len(pending), size):
            batch = pending[start : start + size]
            vectors = self.embedding.vectors([stored_text(s.message) for s in batch])
            with self.store._lock:
                for stored, vector in zip(batch, vectors, strict=True):
                    if vector is not None and stored.vector is None:
                        stored.vector = vector
                        done += 1
            if progress is not None:
                progress(done, len(pending))
        return done


def _order_of(stored: Any) -> int:
    return int(stored.order)
