"""Message vectors in the SQLite file: a conversation searched by meaning.

The fact vectors' design (`sqlite.vectors`) on messages. The history store calls `prepare`
before its write transaction (the model runs there, never under the write lock), then
`write` inside it, so a message and its vector commit together. Search reads the
candidates' (pk, vector) (one session's when the search names one: the cost stays that of
the session, whatever else the file holds), ranks them with
`search.vectors.rank_by_cosine`, and reads the rows of the best `top_k` only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import apsw

from ...errors import SqlmemError
from ...records import Message
from ...rules.embedding import Embedding
from ...rules.encoding import dumps_json
from ...rules.history_modes import message_needs_vector, vector_text_ms
from ...rules.rows import messages_from_rows
from ...search.vectors import Vector, from_blobs, rank_by_cosine, to_blob
from ..core.engine import Engine
from . import message_vectors_sql as sql
from .history_sql import DETACHED_SESSION

_log = logging.getLogger("sqlmem")

__all__ = ["MessageVectors", "Prepared"]

#: (position in the batch, content hash, unit vector) of the messages about to be written
#: that got a vector.
Prepared = list[tuple[int, str, Vector]]

Progress = Callable[[int, int], object]


class MessageVectors:
    """The vectors of one history store, through one embedder."""

    def __init__(self, engine: Engine, embedding: Embedding) -> None:
        self._engine = engine
        self.embedding = embedding

    # -- writes ------------------------------------------------------------------------------

    def prepare(self, contents: Sequence[str]) -> Prepared:
        """Vectors for the texts of messages about to be appended: from the cache, from
        identical text already stored, else from the model (outside any transaction).

        An append inside `MemoryDB.atomic()` comes here with the write lock held, and the
        model must not run under it: only known vectors are taken then, and the missing
        ones are filled once the block has committed and released the lock
        (`_fill_after_commit`)."""
        wanted = [(i, text) for i, text in enumerate(contents) if message_needs_vector(text)]
        if not wanted:
            return []
        texts = [text for _, text in wanted]
        keys = [self.embedding.key(t) for t in texts]
        held = self._engine.writer_held_by_me()
        vectors = self.embedding.vectors(texts, self._stored(keys), run_model=held is None)
        if held is not None and any(vector is None for vector in vectors):
            held.after_commit(self._fill_after_commit)
        return [
            (i, key, vector)
            for (i, _), key, vector in zip(wanted, keys, vectors, strict=True)
            if vector is not None
        ]

    def _fill_after_commit(self) -> None:
        """The vectors an `atomic()` block's appends lacked, once it committed: the model
        runs with no lock held. The block has committed, so nothing here may fail it: a
        busy or closed file is logged, and `embed_pending` fills them later."""
        try:
            self.embed_pending(64, None)
        except SqlmemError as exc:
            _log.warning(
                "message vectors after atomic() not stored (embed_pending() fills them later): %s",
                exc,
            )

    def _stored(self, keys: list[str]) -> dict[str, Vector]:
        params = {"hashes": dumps_json(sorted(set(keys))), "model": self.embedding.model}
        with self._engine.read() as conn:
            rows: list[Any] = conn.execute(sql.STORED_BY_HASH, params).fetchall()
        return {key: from_blobs([blob], len(blob) // 4)[0] for key, blob in rows}

    def write(
        self, conn: apsw.Connection, session_pk: int, first_seq: int, prepared: Prepared
    ) -> None:
        """Inside the append's transaction, after the insert: one prepared statement
        stepped per vector, nothing else done under the lock."""
        if not prepared:
            return
        model = self.embedding.model
        conn.executemany(
            sql.INSERT_BY_SEQ,
            [
                {
                    "session": session_pk,
                    "seq": first_seq + i,
                    "model": model,
                    "dim": int(vector.shape[0]),
                    "hash": key,
                    "vector": to_blob(vector),
                }
                for i, key, vector in prepared
            ],
        )

    def embed_pending(self, batch_size: int, progress: Progress | None) -> int:
        """Fill the vectors that are missing (or of another model), a batch at a time:
        read, embed (no lock held), write those whose text did not change meanwhile.
        Returns how many were written; messages the embedder fails on are left for later."""
        model = self.embedding.model
        with self._engine.read() as conn:
            total = sql.count_without_vectors(conn, model)
        done, after = 0, 0
        while True:
            params = {"after": after, "limit": batch_size, "model": model}
            with self._engine.read() as conn:
                page: list[Any] = conn.execute(sql.PENDING_PAGE, params).fetchall()
            if not page:
                return done
            after = page[-1][0]
            texts = [vector_text_ms(content, name, ms) for _, content, name, ms in page]
            keys = [self.embedding.key(t) for t in texts]
            vectors = self.embedding.vectors(texts, self._stored(keys))
            with self._engine.write() as conn:
                for (pk, content, _, _), key, vector in zip(page, keys, vectors, strict=True):
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

    def search(self, query: Vector, limit: int, session_id: str | None) -> list[Message]:
        """The `limit` messages (of `session_id` when given) most similar to `query`, best
        first, `score` the cosine. Equal cosines rank by insertion (pk), as in the twin."""
        dim = int(query.shape[0])
        params: dict[str, Any] = {"model": self.embedding.model, "dim": dim}
        with self._engine.read() as conn:
            candidates = _candidates(conn, session_id, params)
            if not candidates:
                return []
            candidates.sort(key=_first)
            matrix = from_blobs([blob for _, blob in candidates], dim)
            best = rank_by_cosine(matrix, query, limit)
            pks = [candidates[i][0] for i, _ in best]
            rows: list[Any] = conn.execute(sql.ROWS_BY_PK, {"pks": dumps_json(pks)}).fetchall()
        by_pk = {row[0]: row for row in rows}
        hits: list[Message] = []
        for pk, (_, cosine) in zip(pks, best, strict=True):
            row = by_pk.get(pk)
            if row is not None:
                hits.extend(messages_from_rows([row[1:10]], row[10], [cosine]))
        return hits


def _first(row: Sequence[Any]) -> Any:
    return row[0]


def _candidates(conn: apsw.Connection, session_id: str | None, params: dict[str, Any]) -> list[Any]:
    """(pk, vector blob) of the messages a vector search ranks: the session's, else every
    live one (a purge under way hides its session's rows, which costs a join)."""
    if session_id is not None:
        params["session"] = session_id
        return conn.execute(sql.CANDIDATES_SESSION, params).fetchall()
    if conn.execute(DETACHED_SESSION).fetchall():
        return conn.execute(sql.CANDIDATES_LIVE, params).fetchall()
    return conn.execute(sql.CANDIDATES_ALL, params).fetchall()
