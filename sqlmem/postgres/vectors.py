"""Fact vectors on PostgreSQL: the SQLite store's design (`sqlmem.sqlite.stores.vectors`)
on one agent's rows. Vectors are computed before the write transaction (the model never
runs while the agent's corpus row is locked), written inside it, so a fact and its vector
commit together; search reads the filtered candidates' (pk, vector) in one snapshot, ranks
them exactly with numpy (`search.vectors.rank_by_cosine`), and reads the full rows of the
best `top_k` only. float32 in bytea: no pgvector needed (an index over it is the next step
for very large agents, as the matrix cache is on SQLite).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import SqlmemError
from ..records import Fact
from ..rules.embedding import Embedding
from ..rules.encoding import now_ms
from ..rules.filters import FactRow
from ..rules.rows import facts_from_rows
from ..search.vectors import Vector, from_blobs, rank_by_cosine, to_blob
from . import facts_sql
from . import vectors_sql as sql
from .codec import decode, encode
from .engine import Conn, Engine

__all__ = ["FactVectors", "Prepared"]

_log = logging.getLogger("sqlmem")

#: (fact id, content hash, unit vector) of one fact about to be written.
Prepared = list[tuple[str, str, Vector]]

Progress = Callable[[int, int], object]


class FactVectors:
    """The vectors of one agent's facts, through one embedder."""

    def __init__(self, engine: Engine, embedding: Embedding) -> None:
        self._engine = engine
        self._agent = engine.agent_id
        self.embedding = embedding

    # -- writes ------------------------------------------------------------------------------

    def prepare(self, rows: Sequence[FactRow]) -> Prepared:
        """Vectors for rows about to be written: from the cache, from identical content
        already stored, else from the model (outside any transaction of ours).

        Inside `atomic()` the block's transaction is already open and the model must not
        run in it (its row locks would be held for the model's time): only known vectors
        are taken, the others are computed after the block commits and stored in a short
        transaction of their own (`_fill_after_commit`), as on SQLite."""
        if not rows:
            return []
        held = self._engine.in_atomic
        texts = [r.content for r in rows]
        keys = [self.embedding.key(t) for t in texts]
        vectors = self.embedding.vectors(texts, self._stored(keys), run_model=not held)
        if held:
            later = [(r.id, r.content) for r, v in zip(rows, vectors, strict=True) if v is None]
            if later:
                self._engine.after_commit(lambda: self._fill_after_commit(later))
        return [
            (r.id, key, vector)
            for r, key, vector in zip(rows, keys, vectors, strict=True)
            if vector is not None
        ]

    def _stored(self, keys: list[str]) -> dict[str, Vector]:
        params = {
            "agent": self._agent,
            "hashes": sorted(set(keys)),
            "model": self.embedding.model,
        }
        with self._engine.read() as conn:
            rows = conn.execute(sql.STORED_BY_HASH, params).fetchall()
        return {key: from_blobs([bytes(blob)], len(blob) // 4)[0] for key, blob in rows}

    def write(self, conn: Conn, prepared: Prepared) -> None:
        """Inside the fact's write transaction, after its upsert."""
        if not prepared:
            return
        model = self.embedding.model
        with conn.cursor() as cur:
            cur.executemany(
                sql.UPSERT_BY_ID,
                [
                    {
                        "agent": self._agent,
                        "id": encode(fact_id),
                        "model": model,
                        "dim": int(vector.shape[0]),
                        "hash": key,
                        "vector": to_blob(vector),
                    }
                    for fact_id, key, vector in prepared
                ],
            )

    def _fill_after_commit(self, written: list[tuple[str, str]]) -> None:
        """Vectors of facts an `atomic()` block wrote, once it committed: the model runs
        with no transaction open, and each vector is stored only if its fact still holds
        the text that was embedded. The block has committed, so nothing here may fail
        it: a busy or unreachable server is logged, and `embed_pending` fills those
        vectors later."""
        try:
            texts = [content for _, content in written]
            keys = [self.embedding.key(t) for t in texts]
            vectors = self.embedding.vectors(texts, self._stored(keys))
            model = self.embedding.model
            params = [
                {
                    "agent": self._agent,
                    "id": encode(fact_id),
                    "content": encode(content),
                    "model": model,
                    "dim": int(vector.shape[0]),
                    "hash": key,
                    "vector": to_blob(vector),
                }
                for (fact_id, content), key, vector in zip(written, keys, vectors, strict=True)
                if vector is not None
            ]
            if params:
                with self._engine.write() as conn, conn.cursor() as cur:
                    cur.executemany(sql.FILL_BY_ID, params)
        except SqlmemError as exc:
            _log.warning(
                "vectors of %d fact(s) written inside atomic() were not stored "
                "(embed_pending() fills them later): %s",
                len(written),
                exc,
            )

    def embed_pending(self, batch_size: int, progress: Progress | None) -> int:
        """Fill the vectors that are missing (or of another model), a batch at a time:
        read, embed (no lock held), write those whose content did not change meanwhile.
        Returns how many were written; facts the embedder fails on are left for later."""
        model = self.embedding.model
        base = {"agent": self._agent, "model": model}
        with self._engine.read() as conn:
            row = conn.execute(sql.PENDING_COUNT, {**base, "now": now_ms()}).fetchone()
        total = int(row[0]) if row else 0
        done, after = 0, 0
        while True:
            params = {**base, "after": after, "limit": batch_size, "now": now_ms()}
            with self._engine.read() as conn:
                page = conn.execute(sql.PENDING_PAGE, params).fetchall()
            if not page:
                return done
            after = page[-1][0]
            texts = [decode(content) for _, content in page]
            keys = [self.embedding.key(t) for t in texts]
            vectors = self.embedding.vectors(texts, self._stored(keys))
            with self._engine.write() as conn:
                for (pk, content), key, vector in zip(page, keys, vectors, strict=True):
                    if vector is None:
                        continue
                    cur = conn.execute(
                        sql.FILL_ONE,
                        {
                            **base,
                            "pk": pk,
                            "content": content,
                            "dim": int(vector.shape[0]),
                            "hash": key,
                            "vector": to_blob(vector),
                        },
                    )
                    done += max(cur.rowcount, 0)
            if progress is not None:
                progress(done, total)

    # -- search ------------------------------------------------------------------------------

    def search(
        self, query: Vector, limit: int, filter_key: tuple[Any, Any], params: dict[str, Any]
    ) -> list[Fact]:
        """The `limit` live facts passing the filters most similar to `query`, best
        first, `score` = the cosine. `params` are the filters' (`facts._filter_params`)."""
        dim = int(query.shape[0])
        params = {**params, "agent": self._agent, "model": self.embedding.model, "dim": dim}
        with self._engine.snapshot() as conn:
            candidates = conn.execute(sql.candidates_sql(*filter_key), params).fetchall()
            if not candidates:
                return []
            matrix = from_blobs([bytes(blob) for _, blob in candidates], dim)
            best = rank_by_cosine(matrix, query, limit)
            pks = [candidates[i][0] for i, _ in best]
            rows = conn.execute(facts_sql.SELECT_BY_PK, (self._agent, pks)).fetchall()
        by_pk = {row[0]: row[1:] for row in rows}
        ranked = [
            (decode(r[0]), decode(r[1]), decode(r[2]), *r[3:], -cosine)
            for pk, (_, cosine) in zip(pks, best, strict=True)
            for r in (by_pk[pk],)
        ]
        return facts_from_rows(ranked, ranked=True)
