"""Message vectors on PostgreSQL: the SQLite store's design (`sqlmem.sqlite.stores.message_vectors`)
on one agent's rows. Vectors are computed before the append's transaction (the model never
runs while the agent's statistics row is locked) and written inside it, right after the
messages, so a message and its vector commit together; search reads the candidates'
vectors (one session's when the search names one) in one snapshot, ranks them exactly with
numpy, and reads the rows of the best `top_k` only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import SqlmemError
from ..records import Message
from ..rules.embedding import Embedding
from ..rules.history_modes import message_needs_vector, vector_text_ms
from ..rules.rows import messages_from_rows
from ..search.vectors import Vector, from_blobs, rank_by_cosine, to_blob
from . import message_vectors_sql as sql
from .codec import decode, encode
from .engine import Conn, Engine

_log = logging.getLogger("sqlmem")

__all__ = ["MessageVectors", "Prepared"]

#: (position in the batch, content hash, unit vector) of the messages about to be
#: appended that got a vector.
Prepared = list[tuple[int, str, Vector]]

Progress = Callable[[int, int], object]


def _decoded(row: Sequence[Any]) -> tuple[Any, ...]:
    """MESSAGE_COLUMNS with content, name and tool_call_id decoded (codec)."""
    return (row[0], row[1], decode(row[2]), decode(row[3]), decode(row[4]), *row[5:])


class MessageVectors:
    """The vectors of one agent's messages, through one embedder."""

    def __init__(self, engine: Engine, embedding: Embedding) -> None:
        self._engine = engine
        self._agent = engine.agent_id
        self.embedding = embedding

    # -- writes ------------------------------------------------------------------------------

    def prepare(self, contents: Sequence[str]) -> Prepared:
        """Vectors for the texts of messages about to be appended (outside any
        transaction): from the cache, from identical text already stored, else the model."""
        wanted = [(i, text) for i, text in enumerate(contents) if message_needs_vector(text)]
        if not wanted:
            return []
        texts = [text for _, text in wanted]
        keys = [self.embedding.key(t) for t in texts]
        # Inside atomic() the block's transaction is open: no model then; the missing
        # vectors are filled once it has committed (`_fill_after_commit`).
        held = self._engine.in_atomic
        vectors = self.embedding.vectors(texts, self._stored(keys), run_model=not held)
        if held and any(vector is None for vector in vectors):
            self._engine.after_commit(self._fill_after_commit)
        return [
            (i, key, vector)
            for (i, _), key, vector in zip(wanted, keys, vectors, strict=True)
            if vector is not None
        ]

    def _fill_after_commit(self) -> None:
        """The vectors an `atomic()` block's appends lacked, once it committed (no
        transaction open). Failures are logged; `embed_pending` fills them later."""
        try:
            self.embed_pending(64, None)
        except SqlmemError as exc:
            _log.warning(
                "message vectors after atomic() not stored (embed_pending() fills them later): %s",
                exc,
            )

    def _stored(self, keys: list[str]) -> dict[str, Vector]:
        params = {"agent": self._agent, "hashes": sorted(set(keys)), "model": self.embedding.model}
        with self._engine.read() as conn:
            rows = conn.execute(sql.STORED_BY_HASH, params).fetchall()
        return {key: from_blobs([bytes(blob)], len(blob) // 4)[0] for key, blob in rows}

    def write(self, conn: Conn, session: str, first_seq: int, prepared: Prepared) -> None:
        """Inside the append's transaction, after its statement: one more statement.
        `session` is the session id as stored (encoded)."""
        if not prepared:
            return
        conn.execute(
            sql.INSERT_BATCH,
            {
                "agent": self._agent,
                "session": session,
                "first": first_seq,
                "model": self.embedding.model,
                "offsets": [i for i, _, _ in prepared],
                "dims": [int(v.shape[0]) for _, _, v in prepared],
                "hashes": [key for _, key, _ in prepared],
                "vectors": [to_blob(v) for _, _, v in prepared],
            },
        )

    def embed_pending(self, batch_size: int, progress: Progress | None) -> int:
        """Fill the vectors that are missing (or of another model), a batch at a time:
        read, embed (no lock held), write those whose text did not change meanwhile."""
        model = self.embedding.model
        base = {"agent": self._agent, "model": model}
        with self._engine.read() as conn:
            row = conn.execute(sql.WITHOUT_VECTORS, base).fetchone()
        total = int(row[0]) if row else 0
        done, after = 0, ("", 0)
        while True:
            params = {**base, "after_session": after[0], "after_seq": after[1], "limit": batch_size}
            with self._engine.read() as conn:
                page = conn.execute(sql.PENDING_PAGE, params).fetchall()
            if not page:
                return done
            after = (page[-1][0], page[-1][1])
            texts = [
                vector_text_ms(decode(content), decode(name), ms)
                for _, _, content, name, ms in page
            ]
            keys = [self.embedding.key(t) for t in texts]
            vectors = self.embedding.vectors(texts, self._stored(keys))
            with self._engine.write() as conn:
                for (session, seq, content, _, _), key, vector in zip(
                    page, keys, vectors, strict=True
                ):
                    if vector is None:
                        continue
                    cur = conn.execute(
                        sql.FILL_ONE,
                        {
                            **base,
                            "session": session,
                            "seq": seq,
                            "content": content,
                            "dim": int(vector.shape[0]),
                            "hash": key,
                            "vector": to_blob(vector),
                        },
                    )
                    done += max(cur.rowcount, 0)
            if progress is not None:
                progress(done, total)

    def without_vectors(self, conn: Conn, model: str | None) -> int:
        row = conn.execute(sql.WITHOUT_VECTORS, {"agent": self._agent, "model": model}).fetchone()
        return int(row[0]) if row else 0

    # -- search ------------------------------------------------------------------------------

    def search(self, query: Vector, limit: int, session_id: str | None) -> list[Message]:
        """The `limit` messages (of `session_id` when given) most similar to `query`, best
        first, `score` the cosine."""
        dim = int(query.shape[0])
        params: dict[str, Any] = {"agent": self._agent, "model": self.embedding.model, "dim": dim}
        if session_id is not None:
            params["session"] = encode(session_id)
        with self._engine.snapshot() as conn:
            if session_id is not None:
                candidates = conn.execute(sql.CANDIDATES_SESSION, params).fetchall()
            else:
                candidates = conn.execute(sql.CANDIDATES_ALL, params).fetchall()
            if not candidates:
                return []
            matrix = from_blobs([bytes(blob) for _, _, blob in candidates], dim)
            best = rank_by_cosine(matrix, query, limit)
            keys = [(candidates[i][0], candidates[i][1]) for i, _ in best]
            rows = conn.execute(
                sql.ROWS_BY_KEYS, (self._agent, [k[0] for k in keys], [k[1] for k in keys])
            ).fetchall()
        by_key = {(row[0], row[1]): row for row in rows}
        hits: list[Message] = []
        for key, (_, cosine) in zip(keys, best, strict=True):
            row = by_key.get(key)
            if row is not None:
                hits.extend(messages_from_rows([_decoded(row[1:])], decode(row[0]), [cosine]))
        return hits
