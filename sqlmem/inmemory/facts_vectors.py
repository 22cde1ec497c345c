"""The in-memory fact store's vectors: computed before its lock is taken (or, inside an
`atomic()` block, which holds the lock throughout, once the block has ended, as on SQLite),
kept on each stored fact (`FactDoc.vector`), ranked exactly by cosine."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ..protocols import Embedder
from ..records import Fact
from ..rules.encoding import now_ms
from ..rules.filters import FactRow, Filters
from ..rules.items import ItemFilters
from ..search.embedding import Embedding
from ..search.vectors import Vector, rank_by_cosine
from ..stores.facts_port import Progress
from .facts_docs import FactDoc

__all__ = ["InMemoryFactVectors"]


class _FactsHeld(Protocol):
    """What the vectors read of the in-memory fact port that owns them (declared here so
    the two modules do not import each other)."""

    _docs: dict[str, FactDoc]
    _lock: threading.RLock
    _open_block: Callable[[], list[Callable[[], None]] | None]


class InMemoryFactVectors:
    """The vectors of one in-memory fact store (its `vectors` slot)."""

    hint = "InMemoryFactStore(embedder=...)"

    def __init__(self, port: _FactsHeld, embedding: Embedding | None) -> None:
        self._port = port
        self._embedding = embedding

    @property
    def embedder(self) -> Embedder | None:
        return self._embedding.embedder if self._embedding is not None else None

    @property
    def embedding(self) -> Embedding:
        """The embedding, for the calls the front makes only with an embedder."""
        assert self._embedding is not None, "the front checks for an embedder first"
        return self._embedding

    def for_rows(self, rows: Sequence[FactRow]) -> dict[str, Any]:
        """Vectors of rows about to be written, computed before the lock is taken (the
        embedding's content-hash cache spares identical texts). Inside an `atomic()`
        block the lock is already held for the whole block: as on SQLite, only known
        vectors are taken then, and the others computed once the block has ended
        (`_fill_after_block`)."""
        embedding = self._embedding
        if embedding is None or not rows:
            return {}
        block = self._port._open_block()
        texts = [r.content for r in rows]
        vectors = embedding.vectors(texts, run_model=block is None)
        if block is not None:
            later = [(r.id, r.content) for r, v in zip(rows, vectors, strict=True) if v is None]
            if later:
                block.append(lambda: self._fill_after_block(embedding, later))
        return {r.id: v for r, v in zip(rows, vectors, strict=True) if v is not None}

    def _fill_after_block(self, embedding: Embedding, written: list[tuple[str, str]]) -> None:
        """Vectors of facts an `atomic()` block wrote, once it ended: the model runs with
        no lock held; each vector is kept only if its fact still holds the embedded text."""
        vectors = embedding.vectors([content for _, content in written])
        with self._port._lock:
            for (fact_id, content), vector in zip(written, vectors, strict=True):
                doc = self._port._docs.get(fact_id)
                if vector is not None and doc is not None and doc.row.content == content:
                    doc.vector = vector

    def embed_pending(self, batch_size: int, progress: Progress | None) -> int:
        """Vectors for the live facts that have none; returns how many were added."""
        embedding = self._embedding
        assert embedding is not None, "the front checks for an embedder first"
        with self._port._lock:
            now = now_ms()
            pending = sorted(
                (d.pk, d.row.id, d.row.content)
                for d in self._port._docs.values()
                if d.vector is None and d.unexpired(now)
            )
        done = 0
        for start in range(0, len(pending), batch_size):
            batch = pending[start : start + batch_size]
            vectors = embedding.vectors([content for _, _, content in batch])
            with self._port._lock:
                for (_, fact_id, content), vector in zip(batch, vectors, strict=True):
                    doc = self._port._docs.get(fact_id)
                    if vector is not None and doc is not None and doc.row.content == content:
                        doc.vector = vector
                        done += 1
            if progress is not None:
                progress(done, len(pending))
        return done

    def without_vectors(self) -> int:
        """Live facts without a vector (for `stats()`-like reporting)."""
        with self._port._lock:
            now = now_ms()
            return sum(
                1 for d in self._port._docs.values() if d.vector is None and d.unexpired(now)
            )

    def nearest(
        self, vector: Vector, wanted: int, filters: Filters, items: ItemFilters
    ) -> list[Fact]:
        """The vector leg: exact cosine over the live facts passing the filters."""
        with self._port._lock:
            now = now_ms()
            docs = sorted(
                (
                    d
                    for d in self._port._docs.values()
                    if d.vector is not None
                    and d.vector.shape == vector.shape
                    and d.accepted_by(filters, items, now)
                ),
                key=lambda d: d.pk,
            )
        if not docs:
            return []
        best = rank_by_cosine(np.stack([d.vector for d in docs]), vector, wanted)
        return [docs[i].fact(cosine) for i, cosine in best]
