"""One store's use of its embedder: when to call it, what to do when it fails.

Both fact stores (the SQLite one and the in-memory twin) go through this, so they embed
the same texts, cache alike and fail alike:

- A text already embedded under the same model is not embedded again: first a bounded
  in-process cache (content hash -> vector), then what the caller found stored (the
  database's vectors of identical content), and only then the model, once per distinct text
  of the batch.
- The model runs before any write transaction and never under a lock of ours: the caller
  asks for vectors first and writes afterwards. A write made while the caller already
  holds the lock (inside `atomic()`) takes only known vectors (`run_model=False`); the
  store computes the others after the block commits.
- A query goes through `embed_query` when the embedder has one (asymmetric models), and
  is cached apart from stored texts then: the same words as a query and as a stored text
  have two different vectors.
- An embedder that raises, or returns something `search.vectors.checked_rows` refuses,
  never costs the write: those texts get no vector, a warning is logged on the "sqlmem"
  logger, and `embed_pending` fills them later.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from ..search.vectors import Vector, checked_rows, content_key, unit_query
from .embedder import check_embedder, embed_queries, has_query_side

__all__ = ["Embedding"]

_log = logging.getLogger("sqlmem")

#: Vectors kept in the in-process cache (384 float32 dims: ~1.5 KB each, ~6 MB in all).
CACHE_SIZE = 4096


class Embedding:
    """Vectors for texts from one embedder, cached by content hash; thread-safe."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = check_embedder(embedder)
        self.model: str = embedder.model
        # Queries share the stored texts' cache entries only when both are embedded alike.
        self._query_model = self.model + "\x00query" if has_query_side(embedder) else self.model
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()

    def key(self, text: str) -> str:
        return content_key(self.model, text)

    def vectors(
        self,
        texts: Sequence[str],
        stored: Mapping[str, Vector] | None = None,
        *,
        run_model: bool = True,
    ) -> list[Vector | None]:
        """A unit vector per text (None where the model gave none). `stored`: vectors
        already in the store, by content hash. `run_model=False`: only what is known
        already (cache, `stored`), None for the rest: for a caller that holds a write
        lock and computes the rest once it is released."""
        keys = [self.key(t) for t in texts]
        found: dict[str, Vector | None] = {}
        with self._lock:
            for key in keys:
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
                    found[key] = hit
        for key in keys:
            if key not in found and stored and key in stored:
                found[key] = stored[key]
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in found:
                missing.setdefault(key, text)
        if missing and run_model:
            found.update(zip(missing, self._embed(list(missing.values())), strict=True))
        self._remember(found)
        return [found.get(key) for key in keys]

    def query(self, text: str) -> Vector | None:
        """The query's unit vector, or None: no usable vector (a zero vector), or the
        embedder failed (logged): vector search then finds nothing and hybrid search
        ranks by BM25 alone, rather than failing the agent's turn."""
        key = content_key(self._query_model, text)
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None:
            return hit
        try:
            vector = unit_query(embed_queries(self.embedder, [text]))
        except Exception as exc:  # the caller's code, as for writes
            _log.warning(
                "embedder %r failed for a query; searching without its vector: %s: %s",
                self.model,
                type(exc).__name__,
                exc,
            )
            return None
        if vector is not None:
            self._remember({key: vector})
        return vector

    def _embed(self, texts: list[str]) -> list[Vector | None]:
        try:
            rows = checked_rows(self.embedder.embed(texts), len(texts))
        except Exception as exc:  # the embedder is the caller's code: never lose the write
            _log.warning(
                "embedder %r failed for %d text(s), stored without vectors "
                "(embed_pending() fills them later): %s: %s",
                self.model,
                len(texts),
                type(exc).__name__,
                exc,
            )
            return [None] * len(texts)
        refused = sum(row is None for row in rows)
        if refused:
            _log.warning(
                "embedder %r gave no usable vector (NaN, inf or zero) for %d of %d text(s); "
                "stored without vectors",
                self.model,
                refused,
                len(texts),
            )
        return rows

    def _remember(self, found: Mapping[str, Vector | None]) -> None:
        with self._lock:
            for key, vector in found.items():
                if vector is not None:
                    self._cache[key] = vector
                    self._cache.move_to_end(key)
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
