"""What a backend executes for the history store front (`sqlmem.stores.history`).

The front checks every argument, applies the rules that are the same everywhere (the
pair-safe window, the empty answers, the search modes) and then makes one call here. A
port only executes: SQL on SQLite and PostgreSQL, dict operations in memory. Its inputs
are already checked: session ids are valid strings, messages are `Message` records that
passed `check_message`, counts are ints within the bounds the front enforces.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from ..config import StoreConfig
from ..records import Message
from ..rules.embedder import check_embedder
from ..rules.history_modes import vector_texts

if TYPE_CHECKING:  # numpy: only with an embedder
    from ..protocols import Embedder
    from ..rules.history_hybrid import MessageVectorLeg
    from ..search.embedding import Embedding
    from ..search.vectors import Vector

__all__ = ["HistoryPort", "MessageVectorStore", "VectorsPart"]


@runtime_checkable
class HistoryPort(Protocol):
    """The storage operations of one backend's conversation history."""

    @property
    def config(self) -> StoreConfig:
        """The settings the store honours (`history_search`, `max_history_len`...)."""
        ...

    @property
    def label(self) -> str:
        """How the store shows itself in `repr` (the name users know, and where it lives)."""
        ...

    @property
    def embedder(self) -> Embedder | None:
        """The embedder message vectors come from (None: BM25 search only)."""
        ...

    def append(self, session_id: str, messages: Sequence[Message], now: int) -> list[int]:
        """Store the checked, non-empty `messages` in one transaction, vectors made before
        it (no lock held while the model runs); archive past `max_history_len`; return the
        seqs in order."""
        ...

    def set_summary(self, session_id: str, text: str, now: int) -> None: ...

    def compact(self, session_id: str, keep_last: int, summary: str | None, now: int) -> int:
        """In one transaction: store `summary` (when given) and archive every active message
        but the newest `keep_last` (>= 0), pair-safe; return how many were archived."""
        ...

    def pop(self, session_id: str, now: int) -> Message | None: ...

    def purge(self, session_id: str) -> None: ...

    def recent(self, session_id: str, n: int) -> list[Message]:
        """The newest `n` (> 0) active messages, oldest first, with no pair-safe trimming."""
        ...

    def around(self, session_id: str, seq: int, before: int, after: int) -> list[Message]:
        """Up to `before` + 1 messages at or before `seq` and `after` after it, archived
        included, oldest first (the front checks that `seq` itself is among them)."""
        ...

    def all(self, session_id: str, include_archived: bool) -> list[Message]: ...

    def count(self, session_id: str) -> int: ...

    def summary(self, session_id: str) -> str: ...

    def archived_seq(self, session_id: str) -> int:
        """The session's archive boundary as stored (0 for an unknown session)."""
        ...

    def sessions(self) -> list[str]: ...

    def sessions_after(self, after: str | None, limit: int | None) -> list[str]:
        """The listed sessions sorting after `after` (None: from the first), at most
        `limit` (> 0; None: all), sorted by code point."""
        ...

    def search_words(self, query: str, session_id: str | None, top_k: int) -> list[Message]:
        """Search mode "any" for a checked query and `top_k` > 0, best first."""
        ...

    def vector_leg(self) -> MessageVectorLeg | None:
        """The message vectors' cosine ranking (None without an embedder)."""
        ...

    def embed_pending(self, batch_size: int, progress: Callable[[int, int], object] | None) -> int:
        """Fill the missing vectors (the front has checked that there is an embedder and
        the batch size); return how many were filled."""
        ...


class MessageVectorStore(Protocol):
    """A database backend's message vectors (`sqlite.message_vectors`,
    `postgres.message_vectors`): the cosine leg (`rules.history_hybrid.MessageVectorLeg`),
    plus what an append and `embed_pending` need. What `prepare` returns goes to the
    backend's own write, in the append's transaction."""

    @property
    def embedding(self) -> Embedding: ...

    def search(self, query: Vector, limit: int, session_id: str | None) -> list[Message]: ...

    def prepare(self, contents: Sequence[str]) -> Any: ...

    def embed_pending(
        self, batch_size: int, progress: Callable[[int, int], object] | None
    ) -> int: ...


V = TypeVar("V", bound=MessageVectorStore)


class VectorsPart(Generic[V]):
    """What a database port does with message vectors, the same over any database: the
    embedder checked once, the model loaded (numpy imported) only with one, vectors
    prepared before the append's transaction, the leg and the filler handed out as they
    are. The in-memory port keeps its vectors on its messages instead."""

    def __init__(
        self, config: StoreConfig, embedder: Embedder | None, vectors_of: Callable[[Embedding], V]
    ) -> None:
        self._config = config
        self._vectors: V | None = None
        if check_embedder(embedder) is not None:  # numpy loads only with an embedder
            from ..search.embedding import Embedding

            self._vectors = vectors_of(Embedding(embedder))

    @property
    def config(self) -> StoreConfig:
        return self._config

    @property
    def embedder(self) -> Embedder | None:
        return self._vectors.embedding.embedder if self._vectors is not None else None

    def _prepared(self, messages: Sequence[Message], now: int) -> Any:
        """The messages' vectors, made before any transaction: the model runs with no
        lock held (None without an embedder)."""
        vectors = self._vectors
        return vectors.prepare(vector_texts(messages, now)) if vectors is not None else None

    def vector_leg(self) -> MessageVectorLeg | None:
        return self._vectors

    def embed_pending(self, batch_size: int, progress: Callable[[int, int], object] | None) -> int:
        assert self._vectors is not None  # the front checked the embedder
        return self._vectors.embed_pending(batch_size, progress)
