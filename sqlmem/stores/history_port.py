"""What a backend executes for the history store front (`sqlmem.stores.history`).

The front checks every argument, applies the rules that are the same everywhere (the
pair-safe window, the empty answers, the search modes) and then makes one call here. A
port only executes: SQL on SQLite and PostgreSQL, dict operations in memory. Its inputs
are already checked: session ids are valid strings, messages are `Message` records that
passed `check_message`, counts are ints within the bounds the front enforces.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..config import StoreConfig
from ..records import Message

if TYPE_CHECKING:
    from ..protocols import Embedder
    from ..rules.history_hybrid import MessageVectorLeg

__all__ = ["HistoryPort"]


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

    def sessions(self) -> list[str]: ...

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
