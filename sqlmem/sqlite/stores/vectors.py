"""Fact vectors in the SQLite file: computed before the write, stored in it, ranked
exactly with numpy over the facts that pass the filters.

The store calls `prepare` before its write transaction (the model runs there, never under
the write lock), then `write` inside it, so a fact and its vector commit together. Search
reads the candidates' (pk, vector) in one snapshot, ranks them with
`search.vectors.rank_by_cosine`, and reads the full rows of the best `top_k` only.

An unfiltered search on a store of at least `MATRIX_MIN_ROWS` vectors ranks an in-process
copy of them (`_Matrix`: 4 bytes per dimension per fact, e.g. 150 MB for 100,000 facts of
384 dims), read again whenever `fact_vectors_version` moved (every change to the vectors,
by this process or another, counts there). A filtered search reads only its candidates'
vectors from the file: the filters drive (see `vectors_sql.candidates_sql`); a filter
of tags alone, while no stored fact is hidden, reads the tags' vectors without touching
the facts' rows (`vectors_sql.TAGGED_CANDIDATES`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from ...errors import SqlmemError
from ...records import Fact
from ...rules.encoding import dumps_json, now_ms
from ...rules.filters import FactRow, Filters
from ...rules.identity import fingerprint
from ...rules.items import ItemFilters
from ...rules.rows import facts_from_rows
from ...search.embedding import Embedding
from ...search.vectors import Vector, from_blobs, rank_by_cosine, to_blob
from ..core.engine import Engine
from . import vectors_sql as sql
from .facts_sql import FINGERPRINT_PREFIX
from .vectors_sql import count_without_vectors

__all__ = ["MATRIX_MIN_ROWS", "FactVectors", "Prepared"]

_log = logging.getLogger("sqlmem")

#: Below this many vectors, reading them for each unfiltered search costs less than
#: keeping a copy in memory is worth.
MATRIX_MIN_ROWS = 5_000


@dataclass(frozen=True)
class _Matrix:
    """The vectors of one model and dimension as of `version` of fact_vectors."""

    version: int
    dim: int
    pks: list[int]
    matrix: Vector


#: The vector rows of facts about to be written, as `vectors_sql.upsert_by_id_sql` binds them
#: (model, dim, content hash, vector, fact id): everything but the write itself is done
#: before the transaction (`prepare`).
Prepared = list[tuple[str, int, str, bytes, str]]

Progress = Callable[[int, int], object]


class FactVectors:
    """The vectors of one fact store, through one embedder."""

    def __init__(self, engine: Engine, embedding: Embedding) -> None:
        self._engine = engine
        self.embedding = embedding
        self._matrix: _Matrix | None = None

    # -- writes ------------------------------------------------------------------------------

    def prepare(self, rows: Sequence[FactRow]) -> Prepared:
        """Vectors for rows about to be written: from the cache, from identical content
        already stored, else from the model (outside any transaction of ours).

        A write inside `MemoryDB.atomic()` comes here with the write lock already held,
        and the model must not run under it (other writers would wait out the model):
        only known vectors are taken then, and the others are computed once the block
        has committed and released the lock, and written in a short transaction of
        their own (`_fill_after_commit`). Until then those facts count as without a
        vector; if the block rolls back, nothing is computed."""
        if not rows:
            return []
        held = self._engine.writer_held_by_me()
        texts = [r.content for r in rows]
        keys = [self.embedding.key(t) for t in texts]
        stored = self._stored(texts, [r.fingerprint for r in rows])
        vectors = self.embedding.vectors(texts, stored, run_model=held is None)
        if held is not None:
            later = [(r.id, r.content) for r, v in zip(rows, vectors, strict=True) if v is None]
            if later:
                held.after_commit(lambda: self._fill_after_commit(later))
        model = self.embedding.model
        return [
            (model, int(vector.shape[0]), key, to_blob(vector), r.id)
            for r, key, vector in zip(rows, keys, vectors, strict=True)
            if vector is not None
        ]

    def _fill_after_commit(self, written: list[tuple[str, str]]) -> None:
        """Vectors of facts an `atomic()` block wrote, now that it committed and released
        the write lock: the model runs with no lock held, and each vector is stored only
        if its fact still holds the text that was embedded. The block has committed, so
        nothing here may fail it: a busy or closed file is logged, and `embed_pending`
        fills those vectors later (the embedder's own failures are logged by
        `Embedding`)."""
        texts = [content for _, content in written]
        try:
            keys = [self.embedding.key(t) for t in texts]
            vectors = self.embedding.vectors(texts, self._stored(texts))
            params = [
                _vector_row(self.embedding.model, key, vector, id=fact_id, content=content)
                for (fact_id, content), key, vector in zip(written, keys, vectors, strict=True)
                if vector is not None
            ]
            if params:
                with self._engine.write() as conn:
                    conn.executemany(sql.FILL_BY_ID, params)
        except SqlmemError as exc:
            _log.warning(
                "vectors of %d fact(s) written inside atomic() were not stored "
                "(embed_pending() fills them later): %s",
                len(written),
                exc,
            )

    def _stored(self, texts: list[str], fingerprints: list[str] | None = None) -> dict[str, Vector]:
        """Vectors of the store's model already stored for `texts` (facts holding the
        very same content), by content hash, as `Embedding.vectors` takes them.
        `fingerprints`: the texts' fingerprints when the caller has them (a `FactRow`
        carries its own)."""
        if fingerprints is None:
            fingerprints = [fingerprint(t) for t in texts]
        params = {
            "prefixes": dumps_json(sorted({f[:FINGERPRINT_PREFIX] for f in fingerprints})),
            "texts": dumps_json(sorted(set(texts))),
            "model": self.embedding.model,
        }
        with self._engine.read() as conn:
            rows: list[Any] = conn.execute(sql.STORED_BY_CONTENT, params).fetchall()
        key = self.embedding.key
        return {key(text): from_blobs([blob], len(blob) // 4)[0] for text, blob in rows}

    def write(self, conn: apsw.Connection, prepared: Prepared) -> None:
        """Inside the fact's write transaction, after its upsert: one statement per
        thousand rows with every value ready, and a batch counted once in
        fact_vectors_version rather than by a trigger per row (`vectors_sql.BATCH_COUNTED`):
        nothing else is done under the write lock."""
        batch = len(prepared) >= sql.BATCH_MIN_ROWS
        if batch:
            conn.execute(sql.BATCH_COUNTED)
        for start in range(0, len(prepared), sql.UPSERT_CHUNK):
            chunk = prepared[start : start + sql.UPSERT_CHUNK]
            params: list[Any] = []
            for row in chunk:
                params += row
            conn.execute(sql.upsert_by_id_sql(len(chunk)), params)
        if batch:
            conn.execute(sql.BATCH_DONE)

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
            vectors = self.embedding.vectors(texts, self._stored(texts))
            with self._engine.write() as conn:
                for (pk, content), key, vector in zip(page, keys, vectors, strict=True):
                    if vector is None:
                        continue
                    conn.execute(
                        sql.FILL_ONE, _vector_row(model, key, vector, pk=pk, content=content)
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
        with self._engine.snapshot() as conn:
            ranked = self.ranked(conn, query, limit, filters, item_filters, full=True)
        return facts_from_rows([row[1:] for row in ranked], ranked=True)

    def ranked(
        self,
        conn: apsw.Connection,
        query: Vector,
        limit: int,
        filters: Filters,
        item_filters: ItemFilters,
        *,
        full: bool,
    ) -> list[tuple[Any, ...]]:
        """The vector ranking in the caller's read snapshot: `(pk, *columns, -cosine)`
        of the best `limit` live facts passing the filters, best first. Columns: a stored
        fact's (`facts_sql.COLUMNS`) when `full`, else its id alone (a hybrid leg, fused
        on ids: only the fused top_k's rows are read whole)."""
        if filters.empty and item_filters.empty:
            return self._ranked_all(conn, query, limit, full)
        params: dict[str, Any] = filters.params() | item_filters.params()
        params["model"], params["dim"], params["now"] = (
            self.embedding.model,
            int(query.shape[0]),
            now_ms(),
        )
        if _tags_only(filters, item_filters) and not sql.any_hidden(conn):
            found = self._ranked_candidates(conn, sql.TAGGED_CANDIDATES, params, query, limit, full)
            if found is not None:
                return found
        statement = sql.candidates_sql(filters.key, item_filters.key)
        return self._ranked_candidates(conn, statement, params, query, limit, full) or []

    def _ranked_candidates(
        self,
        conn: apsw.Connection,
        statement: str,
        params: dict[str, Any],
        query: Vector,
        limit: int,
        full: bool,
    ) -> list[tuple[Any, ...]] | None:
        """Rank the (pk, vector) rows `statement` selects and read the best ones' rows;
        None when a ranked pk has no fact (a vector or tag row a client without foreign
        keys left behind: only the statement that joins facts can rank then)."""
        candidates: list[Any] = conn.execute(statement, params).fetchall()
        if not candidates:
            return []
        candidates.sort()  # by pk: equal cosines rank by pk, as everywhere
        matrix = from_blobs([blob for _, blob in candidates], int(query.shape[0]))
        best = rank_by_cosine(matrix, query, limit)
        pks = [candidates[i][0] for i, _ in best]
        wanted = {"pks": dumps_json(pks)}
        rows: list[Any] = conn.execute(sql.ROWS_BY_PK if full else sql.IDS_BY_PK, wanted).fetchall()
        if len(rows) < len(pks):
            return None
        by_pk = {row[0]: row for row in rows}
        return [(*by_pk[pk], -cosine) for pk, (_, cosine) in zip(pks, best, strict=True)]

    def _ranked_all(
        self, conn: apsw.Connection, query: Vector, limit: int, full: bool
    ) -> list[tuple[Any, ...]]:
        """Unfiltered: rank every vector (the in-memory matrix when the store is large),
        then read the best rows, skipping expired ones (read more when some were)."""
        matrix = self._current(conn, int(query.shape[0]))
        total = len(matrix.pks)
        take = min(total, 2 * limit + 16)
        statement = sql.LIVE_ROWS_BY_PK if full else sql.LIVE_IDS_BY_PK
        while take:
            best = rank_by_cosine(matrix.matrix, query, take)
            pks = [matrix.pks[i] for i, _ in best]
            params = {"pks": dumps_json(pks), "now": now_ms()}
            rows: list[Any] = conn.execute(statement, params).fetchall()
            if len(rows) >= limit or take == total:
                break
            take = min(total, 4 * take)  # expired facts were among the best: look further
        else:
            return []
        by_pk = {row[0]: row for row in rows}
        ranked = [
            (*by_pk[pk], -cosine) for pk, (_, cosine) in zip(pks, best, strict=True) if pk in by_pk
        ]
        return ranked[:limit]

    def _current(self, conn: apsw.Connection, dim: int) -> _Matrix:
        """The vectors as of this read snapshot: the kept matrix while it is current."""
        found: list[Any] = conn.execute(sql.VERSION).fetchall()
        version = int(found[0][0])
        kept = self._matrix
        if kept is not None and kept.version == version and kept.dim == dim:
            return kept
        params = {"model": self.embedding.model, "dim": dim}
        rows: list[Any] = conn.execute(sql.ALL_VECTORS, params).fetchall()
        fresh = _Matrix(version, dim, [pk for pk, _ in rows], from_blobs([b for _, b in rows], dim))
        self._matrix = fresh if len(rows) >= MATRIX_MIN_ROWS else None
        return fresh


def _tags_only(filters: Filters, item_filters: ItemFilters) -> bool:
    """The filter is a set of tags and nothing else (W10's shape: `tags=[...]`)."""
    return item_filters.empty and filters.key[0] and not any(filters.key[1:])


def _vector_row(model: str, key: str, vector: Vector, **where: Any) -> dict[str, Any]:
    """The parameters of one vector row, plus what identifies its fact (`where`)."""
    return {
        **where,
        "model": model,
        "dim": int(vector.shape[0]),
        "hash": key,
        "vector": to_blob(vector),
    }
