"""The vectors beside a database port's facts, with the life cycle SQLite and PostgreSQL
share: computed before the write transaction (the model never runs under a write lock),
written inside it so a fact and its vector commit together, filled later by
`embed_pending`. The backends' `FactVectors` differ only in their SQL; this wrapper holds
one of them, or none when the store has no embedder (numpy then never loads).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ..rules.embedder import check_embedder

if TYPE_CHECKING:
    from ..protocols import Embedder
    from ..rules.filters import FactRow
    from ..search.embedding import Embedding
    from .facts_port import Progress

__all__ = ["BackendFactVectors", "PortVectors"]


class BackendFactVectors(Protocol):
    """A backend's fact vectors (`sqlite.vectors.FactVectors`, `postgres.vectors...`)."""

    @property
    def embedding(self) -> Embedding: ...

    def prepare(self, rows: Sequence[FactRow]) -> Any: ...

    def write(self, conn: Any, prepared: Any) -> None: ...

    def embed_pending(self, batch_size: int, progress: Progress | None) -> int: ...


_Backend = TypeVar("_Backend", bound=BackendFactVectors)


class PortVectors(Generic[_Backend]):
    """A port's fact vectors: `backend` is None without an embedder."""

    __slots__ = ("backend",)

    hint = "open the store with embedder=..."

    def __init__(self, backend: _Backend | None) -> None:
        self.backend = backend

    @classmethod
    def of(
        cls, embedder: Embedder | None, build: Callable[[Embedding], _Backend]
    ) -> PortVectors[_Backend]:
        """The vectors of a store opened with `embedder` (checked), built by `build`."""
        if check_embedder(embedder) is None:
            return cls(None)
        from ..search.embedding import Embedding  # numpy: only with an embedder

        return cls(build(Embedding(embedder)))

    @property
    def embedder(self) -> Embedder | None:
        return self.backend.embedding.embedder if self.backend is not None else None

    def prepare(self, rows: Sequence[FactRow], *, embed: bool = True) -> Any:
        """Vectors of rows about to be written, before the write transaction; None when
        there are none to write (no embedder, or `embed` False: an import fills them
        afterwards)."""
        return self.backend.prepare(rows) if embed and self.backend is not None else None

    def write(self, conn: Any, prepared: Any) -> None:
        """Inside the rows' write transaction, after their upsert."""
        if prepared:
            assert self.backend is not None  # prepared only with a backend
            self.backend.write(conn, prepared)

    def required(self) -> _Backend:
        """The backend, for the calls the front makes only when there is an embedder
        (vector and hybrid search, `embed_pending`)."""
        assert self.backend is not None, "the front checks for an embedder first"
        return self.backend

    def embed_pending(self, batch_size: int, progress: Progress | None) -> int:
        return self.required().embed_pending(batch_size, progress)
