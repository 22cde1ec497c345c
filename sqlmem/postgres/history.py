"""`PostgresHistoryStore`: the HistoryStore protocol on PostgreSQL, one agent's sessions.

Storage model (migrations/postgres/0001_initial.sql): `sessions` keyed by (agent_id,
session_id) holds each session's seq counter, archive boundary and summary; `messages`
keyed by (agent_id, session_id, seq) holds the messages, tool calls and metadata as the
same compact JSON text as the SQLite file, their tokens as a tsvector and their count.

Seqs come from the session's counter row, updated in the insert's own transaction (the
upsert holds its row lock until commit), so they are unique and gap-free per session
with any number of processes on any number of machines. Every writer of an agent's
messages first takes the agent's `corpus_stats` row (messages), which keeps the BM25
statistics exact and orders the locks (statistics, then session), so writers cannot
deadlock. An append (or append_many) is one statement doing all of this
(`history_sql.APPEND`), in autocommit its own transaction: one round trip after the
pool's liveness check, where it once took eight. Compaction moves
`archived_seq` only, as in SQLite; the pair-safe rules are `sqlmem.rules.window`'s.
0.2's `pop` deletes the newest active message and leaves
`last_seq` alone (a seq is never handed out twice), so seqs may have holes: `holes`
counts those in the active range, keeping `count` one row read; a boundary move over
holes counts what it archived and takes the holes it passed off, as the SQLite store
does. Search: `sqlmem.postgres.ranking` (mode "any", every message counted in the
statistics, the session filter applied before ranking).

With an embedder, each message with text also gets a vector (`message_vectors`, written by
a second statement of the append's transaction, the model run before it), and search
offers modes "vector" and "hybrid" as on SQLite.

Unlike the SQLite store, messages are always indexed: `history_search=False` only makes
`search` refuse, as it does on SQLite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from psycopg import errors as pg

from ..errors import InvalidArgumentError
from ..records import Message
from ..rules.checks import (
    check_around,
    check_count,
    check_history_search,
    check_message,
    check_session_id,
    check_text,
    encode_metadata,
    encode_tool_calls,
)
from ..rules.embedder import check_embedder
from ..rules.encoding import dt_to_ms, now_ms
from ..rules.history_modes import (
    HistoryMode,
    check_history_mode,
    needs_embedder_error,
    vector_texts,
)
from ..rules.rows import messages_from_rows
from ..rules.window import archive_boundary, drop_leading_tool_results
from ..search.query import MAX_QUERY_TERMS, compiler_for, rarest_terms, segment
from . import history_sql as sql
from .codec import decode, encode
from .engine import Conn, Engine
from .ranking import best, lexemes, single_lexemes, tsquery, tsvector

if TYPE_CHECKING:
    from ..protocols import Embedder
    from .message_vectors import MessageVectors, Prepared

__all__ = ["PostgresHistoryStore"]


def _decoded(rows: Iterable[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """MESSAGE_COLUMNS rows with content, name and tool_call_id decoded (codec)."""
    return [(r[0], r[1], decode(r[2]), decode(r[3]), decode(r[4]), *r[5:]) for r in rows]


class PostgresHistoryStore:
    """`HistoryStore` over one agent's rows of a PostgreSQL database; thread-safe."""

    def __init__(self, engine: Engine, embedder: Embedder | None = None) -> None:
        """`embedder`: messages with text get vectors, and search modes "vector" and
        "hybrid" (`message_vectors`)."""
        self._engine = engine
        self._agent = engine.agent_id
        self._config = engine.config
        self._compiler = compiler_for(engine.config.tokenizer)
        self._vectors: MessageVectors | None = None
        if check_embedder(embedder) is not None:  # numpy loads only with an embedder
            from ..search.embedding import Embedding
            from .message_vectors import MessageVectors

            self._vectors = MessageVectors(engine, Embedding(embedder))

    @property
    def embedder(self) -> Embedder | None:
        """The embedder message vectors come from (None: BM25 search only)."""
        return self._vectors.embedding.embedder if self._vectors is not None else None

    @property
    def vectors(self) -> MessageVectors | None:
        """The message vectors (internal: `stats()` counts the missing ones)."""
        return self._vectors

    def __repr__(self) -> str:
        return f"<PostgresHistoryStore agent={self._agent!r}>"

    # -- writes -------------------------------------------------------------------------

    def append(self, session_id: str, message: Message) -> int:
        check_session_id(session_id)
        now = now_ms()
        row = self._encode(check_message(message), now)
        prepared = self._prepare(vector_texts([message], now))  # the model runs: no lock held
        return self._insert(session_id, [row], now, prepared)[0]

    def append_many(self, session_id: str, messages: Iterable[Message]) -> list[int]:
        check_session_id(session_id)
        if isinstance(messages, (Message, str, bytes)) or not isinstance(messages, Iterable):
            raise InvalidArgumentError("messages must be an iterable of sqlmem.Message")
        now = now_ms()
        checked = [check_message(m, f"messages[{i}]") for i, m in enumerate(messages)]
        if not checked:
            return []
        rows = [self._encode(m, now) for m in checked]
        prepared = self._prepare(vector_texts(checked, now))  # no lock held
        return self._insert(session_id, rows, now, prepared)

    def _prepare(self, contents: list[str]) -> Prepared | None:
        vectors = self._vectors
        return vectors.prepare(contents) if vectors is not None else None

    def _encode(self, m: Message, now: int) -> list[Any]:
        """A row's values after (agent_id, session_id, seq); fails before any transaction."""
        for name in ("content", "name", "tool_call_id"):
            check_text(getattr(m, name), f"message.{name}")
        metadata = encode_metadata(m.metadata)
        calls = encode_tool_calls(m.tool_calls)
        check_text(metadata, "message.metadata")
        check_text(calls, "message.tool_calls")
        tokens = self._compiler.tokens(segment(m.content) or m.content)
        return [
            m.role,
            encode(m.content),
            encode(m.name),
            encode(m.tool_call_id),
            calls,
            m.is_error,
            metadata,
            now if m.created_at is None else dt_to_ms(m.created_at),
            len(tokens),
            tsvector(tokens),
        ]

    def _insert(
        self, session_id: str, rows: list[list[Any]], now: int, prepared: Prepared | None
    ) -> list[int]:
        """One statement (`history_sql.APPEND`): statistics, seqs and rows together. With
        `max_history_len` the boundary move needs the seqs it returned, in the same
        transaction: then an explicit one, else the statement is its own (one round trip).
        Vectors too are written in the append's transaction, by a second statement."""
        count = len(rows)
        columns = [list(column) for column in zip(*rows, strict=True)]
        params: dict[str, Any] = dict(zip(sql.APPEND_COLUMNS, columns, strict=True))
        params.update(
            agent=self._agent,
            session=encode(session_id),
            count=count,
            tokens=sum(row[8] for row in rows),
            now=now,
        )
        limit = self._config.max_history_len
        one = limit is None and not prepared
        with self._engine.write_one() if one else self._engine.write() as conn:
            try:
                got = conn.execute(sql.APPEND, params).fetchone()
            except pg.NotNullViolation:  # the statement, and so the transaction, is undone
                raise _exhausted(session_id, count) from None
            assert got is not None
            last, archived, holes = int(got[0]), int(got[1]), int(got[2])
            if prepared:
                vectors = self._vectors
                assert vectors is not None
                vectors.write(conn, params["session"], last - count + 1, prepared)
            if limit is not None and last - archived - holes > limit:
                self._archive(conn, params["session"], (last, archived, holes), limit, None)
        return list(range(last - count + 1, last + 1))

    def set_summary(self, session_id: str, text: str) -> None:
        check_session_id(session_id)
        check_text(text, "text")
        now = now_ms()
        with self._engine.write() as conn:
            conn.execute(sql.SET_SUMMARY, (self._agent, encode(session_id), encode(text), now, now))

    def compact(self, session_id: str, keep_last: int, summary: str | None = None) -> int:
        check_session_id(session_id)
        keep_last = check_count(keep_last, "keep_last")
        if keep_last < 0:
            raise InvalidArgumentError(f"keep_last must be >= 0, got {keep_last}")
        if summary is not None:
            check_text(summary, "summary")
        session, stored = encode(session_id), None if summary is None else encode(summary)
        with self._engine.write() as conn:
            state = conn.execute(sql.SELECT_SESSION, (self._agent, session)).fetchone()
            if state is None:
                if stored is not None:
                    now = now_ms()
                    conn.execute(sql.SET_SUMMARY, (self._agent, session, stored, now, now))
                return 0
            state_values = (int(state[0]), int(state[1]), int(state[2]))
            return self._archive(conn, session, state_values, keep_last, stored)

    def _archive(
        self,
        conn: Conn,
        session: str,
        state: tuple[int, int, int],
        keep: int,
        summary: str | None,
    ) -> int:
        """Archive every active message but the newest `keep` (pair-safe), storing
        `summary` if given, in the caller's transaction; `state` is the session row's
        (last_seq, archived_seq, holes). Returns how many messages were archived."""
        agent = self._agent
        last, archived, holes = state
        if holes == 0 or keep <= 0:
            wanted = last - keep
        else:
            row = conn.execute(sql.OLDEST_KEPT, (agent, session, archived, keep - 1)).fetchone()
            wanted = archived if row is None else int(row[0]) - 1  # keep >= active: none

        def call_at_or_before(seq: int) -> int | None:
            row = conn.execute(
                sql.FIRST_NON_TOOL_AT_OR_BEFORE, (agent, session, archived, seq)
            ).fetchone()
            return None if row is None else int(row[0])

        new = archive_boundary(archived, last, wanted, call_at_or_before)
        moved = new - archived
        if holes and moved:
            got = conn.execute(sql.COUNT_RANGE, (agent, session, archived, new)).fetchone()
            moved = int(got[0]) if got else 0
        if new != archived or summary is not None:
            passed = new - archived - moved
            conn.execute(sql.ARCHIVE, (new, summary, now_ms(), passed, agent, session))
        return moved

    def pop(self, session_id: str) -> Message | None:
        """Remove and return the newest active message (None when there is none), in one
        transaction with its share of the statistics. Its seq is never used again: the
        session's counter stays, and the hole is counted (`sessions.holes`)."""
        check_session_id(session_id)
        params = self._params(session_id, now=now_ms())
        with self._engine.write() as conn:
            conn.execute(sql.LOCK_CORPUS, (self._agent, sql.MESSAGES))
            state = conn.execute(sql.SELECT_SESSION, (self._agent, params["session"])).fetchone()
            if state is None:
                return None
            params["archived"] = int(state[1])
            row = conn.execute(sql.POP, params).fetchone()
            if row is None:
                return None
            conn.execute(sql.POPPED, params)
            conn.execute(sql.UPDATE_STATS, (-1, -int(row[-1]), self._agent, sql.MESSAGES))
        return messages_from_rows(_decoded([row[:-1]]), session_id)[0]

    def purge(self, session_id: str) -> None:
        """One transaction: the session's messages, statistics share and row go together."""
        check_session_id(session_id)
        session = encode(session_id)
        with self._engine.write() as conn:
            conn.execute(sql.LOCK_CORPUS, (self._agent, sql.MESSAGES))
            gone = conn.execute(sql.DELETE_MESSAGES, (self._agent, session)).fetchone()
            conn.execute(sql.DELETE_SESSION, (self._agent, session))
            if gone and gone[0]:
                conn.execute(
                    sql.UPDATE_STATS, (-int(gone[0]), -int(gone[1]), self._agent, sql.MESSAGES)
                )

    # -- reads --------------------------------------------------------------------------

    def _params(self, session_id: str, **extra: Any) -> dict[str, Any]:
        return {"agent": self._agent, "session": encode(session_id), **extra}

    def get_recent(self, session_id: str, n: int, *, pair_safe: bool = True) -> list[Message]:
        """The last `n` active messages, oldest first; pair-safe (the default), never
        starting with a tool result whose call lies outside the window."""
        check_session_id(session_id)
        n = check_count(n, "n")
        if n <= 0:
            return []
        with self._engine.read() as conn:
            rows = conn.execute(sql.SELECT_RECENT, self._params(session_id, limit=n)).fetchall()
        rows.reverse()
        found = messages_from_rows(_decoded(rows), session_id)
        return drop_leading_tool_results(found) if pair_safe else found

    def around(
        self, session_id: str, seq: int, *, before: int = 0, after: int = 1
    ) -> list[Message]:
        """The message at `seq` with up to `before` messages before it and `after` after
        it, archived ones included, oldest first; `[]` when the session or that seq (a
        popped one too) does not exist. One statement, so one snapshot."""
        check_session_id(session_id)
        seq, before, after = check_around(seq, before, after)
        if not 0 < seq <= sql.MAX_SEQ:
            return []
        params = self._params(
            session_id,
            seq=seq,
            before=before + 1,
            after=after,
        )
        with self._engine.read() as conn:
            rows = conn.execute(sql.AROUND, params).fetchall()
        if not any(row[0] == seq for row in rows):
            return []
        rows.sort(key=lambda row: int(row[0]))
        return messages_from_rows(_decoded(rows), session_id)

    def get_all(self, session_id: str, *, include_archived: bool = False) -> list[Message]:
        check_session_id(session_id)
        query = sql.SELECT_ALL if include_archived else sql.SELECT_ALL_ACTIVE
        with self._engine.read() as conn:
            rows = conn.execute(query, self._params(session_id)).fetchall()
        return messages_from_rows(_decoded(rows), session_id)

    def count(self, session_id: str) -> int:
        check_session_id(session_id)
        with self._engine.read() as conn:
            row = conn.execute(sql.COUNT, (self._agent, encode(session_id))).fetchone()
        return int(row[0]) if row else 0

    def get_summary(self, session_id: str) -> str:
        check_session_id(session_id)
        with self._engine.read() as conn:
            row = conn.execute(sql.SELECT_SUMMARY, (self._agent, encode(session_id))).fetchone()
        return decode(row[0]) if row else ""

    def sessions(self) -> list[str]:
        with self._engine.read() as conn:
            return sorted(decode(r[0]) for r in conn.execute(sql.SESSIONS, (self._agent,)))

    def embed_pending(
        self, *, batch_size: int = 64, progress: Callable[[int, int], object] | None = None
    ) -> int:
        """Vectors for the messages with text that have none (or one of another model).
        Returns how many were filled; `progress(done, total)` after each batch."""
        vectors = self._vectors
        if vectors is None:
            raise needs_embedder_error("embed_pending")
        from ..rules.hybrid import check_batch_size  # numpy: only with vectors

        return vectors.embed_pending(check_batch_size(batch_size), progress)

    def search(
        self,
        query: str,
        *,
        session_id: str | None = None,
        top_k: int = 10,
        mode: HistoryMode = "any",
    ) -> list[Message]:
        if check_history_mode(mode) != "any":  # by meaning (numpy loads only then)
            from ..rules.history_hybrid import search_by_meaning

            return search_by_meaning(
                self._config.history_search, query, session_id, top_k, mode, self._vectors,
                lambda wanted: self.search(query, session_id=session_id, top_k=wanted),
            )  # fmt: skip
        top_k = check_history_search(self._config.history_search, query, session_id, top_k)
        if top_k <= 0:
            return []
        terms = self._compiler.terms(query)
        if not terms:
            return []
        params: dict[str, Any] = {
            "agent": self._agent,
            "lexemes": lexemes(terms),
            "query": tsquery(terms, " | "),
        }
        if session_id is not None:
            params["session"] = encode(session_id)
        if len(terms) <= MAX_QUERY_TERMS and single_lexemes(terms):  # ranked in the server
            params.update(limit=top_k, need=1)
            with self._engine.read() as conn:
                found_rows = conn.execute(
                    sql.RANKED if session_id is None else sql.RANKED_SESSION, params
                ).fetchall()
            out: list[Message] = []
            for r in found_rows:
                out.extend(messages_from_rows(_decoded([r[1:-1]]), decode(r[0]), [r[-1]]))
            return out
        with self._engine.snapshot() as conn:
            stats = conn.execute(sql.STATS, (self._agent, sql.MESSAGES)).fetchone()
            rows = [
                ((r[0], r[1]), *r[2:])
                for r in conn.execute(
                    sql.SEARCH if session_id is None else sql.SEARCH_SESSION, params
                )
            ]
            if not stats or not rows:
                return []
            if len(terms) > MAX_QUERY_TERMS:
                docs: dict[str, int] = {}
                for row in rows:
                    for token in row[2] or ():
                        docs[token] = docs.get(token, 0) + 1
                terms = rarest_terms(terms, docs, "any")
                if not terms:
                    return []
            hits = best(rows, terms, int(stats[0]), int(stats[1]), False, top_k)
            if not hits:
                return []
            keys = [key for key, _ in hits]
            found = {
                (r[0], r[1]): r
                for r in conn.execute(
                    sql.SELECT_BY_KEYS,
                    (self._agent, [k[0] for k in keys], [k[1] for k in keys]),
                )
            }
        out = []
        for key, score in hits:
            hit = found.get(key)
            if hit is not None:
                out.extend(messages_from_rows(_decoded([hit[1:]]), decode(hit[0]), [score]))
        return out


def _exhausted(session_id: str, count: int) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"session {session_id!r}: its seq counter cannot take {count} more message(s) "
        f"(seqs end at 2**63-1); nothing was stored. The session stays readable; "
        "purge it or use another session id"
    )
