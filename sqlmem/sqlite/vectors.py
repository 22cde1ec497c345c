"""Fact vectors in the SQLite file (SPEC 17): computed before the write, stored in it, ranked
exactly with numpy over the facts that pass the filters.

The store calls `prepare` before its write transaction (the model runs there, never under
the write lock), then `write` inside it, so a fact and its vector commit together. Search
reads the candidates' (pk, vector) in one snapshot, ranks them with
`search.vectors.rank_by_cosine`, and reads the full rows of the best `top_k` only.

No matrix cache yet: each vector search reads its candidates' vectors from the file (the
page cache keeps them warm). Exact and always current; on very large unfiltered stores it
is the cost to optimise next (see the README).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import apsw

from ..records import Fact
from ..rules.encoding import dumps_json, now_ms
from ..rules.filters import FactRow, Filters
from ..rules.items import ItemFilters
from ..rules.rows import facts_from_rows
from ..search.embedding import Embedding
from ..search.vectors import Vector, from_blobs, rank_by_cosine, to_blob
from . import vectors_sql as sql
from .engine import Engine
from .vectors_sql import count_without_vectors

__all__ = ["FactVectors", "Prepared"]

#: (fact id, content hash, unit vector) of one fact about to be written.
Prepared = list[tuple[str, str, Vector]]

Progress = Callable[[int, int], object]


class FactVectors:
    """The vectors of one fact store, through one embedder."""

    def __init__(self, engine: Engine, embedding: Embedding) -> None:
        self._engine = engine
        self.embedding = embedding

    # -- writes ------------------------------------------------------------------------------

    def prepare(self, rows: Sequence[FactRow]) -> Prepared:
        """Vectors for rows about to be written: from the cache, from identical content
        already stored, else from the model (outside any transaction of ours)."""
        if not rows:
            return []
        texts = [r.content for r in rows]
        keys = [self.embedding.key(t) for t in texts]
        vectors = self.embedding.vectors(texts, self._stored(keys))
        return [
            (r.id, key, vector)
            for r, key, vector in zip(rows, keys, vectors, strict=True)
            if vector is not None
        ]

    def _stored(self, keys: list[str]) -> dict[str, Vector]:
        params = {"hashes": dumps_json(sorted(set(keys))), "model": self.embedding.model}
        with self._engine.read() as conn:
            rows: list[Any] = conn.execute(sql.STORED_BY_HASH, params).fetchall()
        found: dict[str, Vector] = {}
        for key, blob in rows:
            found[key] = from_blobs([blob], len(blob) // 4)[0]
        return found

    def write(self, conn: apsw.Connection, prepared: Prepared) -> None:
        """Inside the fact's write transaction, after its upsert."""
        model = self.embedding.model
        for fact_id, key, vector in prepared:
            conn.execute(
                sql.UPSERT_BY_ID,
                {
                    "id": fact_id,
                    "model": model,
                    "dim": int(vector.shape[0]),
                    "hash": key,
                    "vector": to_blob(vector),
                },
            )

    def embed_pending(self, batch_size: int, progress: Progress | None) -> int:
        """Fill the vectors that are missing (or of another model), a batch at a time:
        read, embed (no lock held), write those whose content did not change meanwhile.
        Returns how many were written; facts the embedder fails on are left for later."""
        model = self.embedding.model
        with self._engine.read() as conn:
            total = count_without_vectors(conn, model)
        done, after = 0, 0
        while True:
            params = {"after": after, "limit": batch_size, "now": now_ms(), "model": model}
            with self._engine.read() as conn:
                page: list[Any] = conn.execute(sql.PENDING_PAGE, params).fetchall()
            if not page:
                return done
            after = page[-1][0]
            texts = [content for _, content in page]
            keys = [self.embedding.key(t) for t in texts]
            vectors = self.embedding.vectors(texts, self._stored(keys))
            with self._engine.write() as conn:
                for (pk, content), key, vector in zip(page, keys, vectors, strict=True):
                    if vector is None:
                        continue
                    conn.execute(
                        sql.FILL_ONE,
                        {
                            "pk": pk,
                            "content": content,
                            "model": model,
                            "dim": int(vector.shape[0]),
                            "hash": key,
                            "vector": to_blob(vector),
                        },
                    )
                    done += conn.changes()
            if progress is not None:
                progress(done, total)

    # -- search ------------------------------------------------------------------------------

    def search(
        self, query: Vector, limit: int, filters: Filters, item_filters: ItemFilters
    ) -> list[Fact]:
        """The `limit` live facts passing the filters most similar to `query`, best
        first, `score` = the cosine."""
        params: dict[str, Any] = filters.params() | item_filters.params()
        params["model"], params["dim"], params["now"] = (
            self.embedding.model,
            int(query.shape[0]),
            now_ms(),
        )
        with self._engine.read() as conn:
            candidates: list[Any] = conn.execute(
                sql.candidates_sql(filters.key, item_filters.key), params
            ).fetchall()
            if not candidates:
                return []
            matrix = from_blobs([blob for _, blob in candidates], int(query.shape[0]))
            best = rank_by_cosine(matrix, query, limit)
            pks = [candidates[i][0] for i, _ in best]
            rows: list[Any] = conn.execute(sql.ROWS_BY_PK, {"pks": dumps_json(pks)}).fetchall()
        by_pk = {row[0]: row[1:] for row in rows}
        ranked = [(*by_pk[pk], -cosine) for pk, (_, cosine) in zip(pks, best, strict=True)]
        return facts_from_rows(ranked, ranked=True)
