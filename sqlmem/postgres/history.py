"""`PostgresHistoryPort`: the history store front's port on PostgreSQL, one agent's
sessions (`PostgresHistoryStore` is the front over it).

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

from collections.abc import Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from psycopg import errors as pg

from ..records import Message
from ..rules.checks import check_text, encode_metadata, encode_tool_calls
from ..rules.encoding import dt_to_ms, now_ms
from ..rules.rows import messages_from_rows
from ..rules.window import archive_boundary
from ..search.query import (
    MAX_QUERY_TERMS,
    QueryCompiler,
    compiler_for,
    rarest_terms,
    segment,
)
from ..stores.history import HistoryStoreFront, seqs_exhausted
from ..stores.history_port import VectorsPart
from . import history_sql as sql
from .codec import decode, encode
from .engine import Conn, Engine
from .ranking import best, lexemes, single_lexemes, tsquery, tsvector

if TYPE_CHECKING:
    from ..protocols import Embedder
    from ..search.embedding import Embedding
    from .message_vectors import MessageVectors

__all__ = ["PostgresHistoryPort", "PostgresHistoryStore", "message_row"]


def _decoded(rows: Iterable[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """MESSAGE_COLUMNS rows with content, name and tool_call_id decoded (codec)."""
    return [(r[0], r[1], decode(r[2]), decode(r[3]), decode(r[4]), *r[5:]) for r in rows]


def _message_vectors(engine: Engine, embedding: Embedding) -> MessageVectors:
    from .message_vectors import MessageVectors  # numpy: only with an embedder

    return MessageVectors(engine, embedding)


def message_row(compiler: QueryCompiler, m: Message, now: int) -> list[Any]:
    """A message's values after (agent_id, session_id, seq), in `history_sql.APPEND_COLUMNS`
    order, its token count at [8]; fails before any transaction (the import writes the
    same row)."""
    for name in ("content", "name", "tool_call_id"):
        check_text(getattr(m, name), f"message.{name}")
    metadata = encode_metadata(m.metadata)
    calls = encode_tool_calls(m.tool_calls)
    check_text(metadata, "message.metadata")
    check_text(calls, "message.tool_calls")
    tokens = compiler.tokens(segment(m.content) or m.content)
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


class PostgresHistoryPort(VectorsPart["MessageVectors"]):
    """The history store's storage operations over one agent's rows (`HistoryPort`);
    thread-safe."""

    def __init__(self, engine: Engine, embedder: Embedder | None = None) -> None:
        """`embedder`: messages with text get vectors, and search modes "vector" and
        "hybrid" (`message_vectors`)."""
        super().__init__(engine.config, embedder, partial(_message_vectors, engine))
        self._engine = engine
        self._agent = engine.agent_id
        self.compiler = compiler_for(engine.config.tokenizer)

    @property
    def label(self) -> str:
        return f"PostgresHistoryStore agent={self._agent!r}"

    @property
    def vectors(self) -> MessageVectors | None:
        """The message vectors (internal: `stats()` counts the missing ones)."""
        return self._vectors

    # -- writes -------------------------------------------------------------------------

    def append(self, session_id: str, messages: Sequence[Message], now: int) -> list[int]:
        """Encode (failing before any transaction), embed (no lock held), then insert.

        One statement (`history_sql.APPEND`): statistics, seqs and rows together. With
        `max_history_len` the boundary move needs the seqs it returned, in the same
        transaction: then an explicit one, else the statement is its own (one round trip).
        Vectors too are written in the append's transaction, by a second statement."""
        rows = [message_row(self.compiler, m, now) for m in messages]
        prepared = self._prepared(messages, now)
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
                raise seqs_exhausted(session_id, count) from None
            assert got is not None
            last, archived, holes = int(got[0]), int(got[1]), int(got[2])
            if prepared:
                assert self._vectors is not None
                self._vectors.write(conn, params["session"], last - count + 1, prepared)
            if limit is not None and last - archived - holes > limit:
                self._archive(conn, params["session"], (last, archived, holes), limit, None)
        return list(range(last - count + 1, last + 1))

    def set_summary(self, session_id: str, text: str, now: int) -> None:
        with self._engine.write() as conn:
            conn.execute(sql.SET_SUMMARY, (self._agent, encode(session_id), encode(text), now, now))

    def compact(self, session_id: str, keep_last: int, summary: str | None, now: int) -> int:
        session, stored = encode(session_id), None if summary is None else encode(summary)
        with self._engine.write() as conn:
            state = conn.execute(sql.SELECT_SESSION, (self._agent, session)).fetchone()
            if state is None:
                if stored is not None:
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

    def pop(self, session_id: str, now: int) -> Message | None:
        """In one transaction with its share of the statistics. The session's counter
        stays, and the hole is counted (`sessions.holes`)."""
        params = self._params(session_id, now=now)
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

    def recent(self, session_id: str, n: int) -> list[Message]:
        with self._engine.read() as conn:
            rows = conn.execute(sql.SELECT_RECENT, self._params(session_id, limit=n)).fetchall()
        rows.reverse()
        return messages_from_rows(_decoded(rows), session_id)

    def around(self, session_id: str, seq: int, before: int, after: int) -> list[Message]:
        """One statement, so one snapshot."""
        params = self._params(session_id, seq=seq, before=before + 1, after=after)
        with self._engine.read() as conn:
            rows = conn.execute(sql.AROUND, params).fetchall()
        rows.sort(key=lambda row: int(row[0]))
        return messages_from_rows(_decoded(rows), session_id)

    def all(self, session_id: str, include_archived: bool) -> list[Message]:
        query = sql.SELECT_ALL if include_archived else sql.SELECT_ALL_ACTIVE
        with self._engine.read() as conn:
            rows = conn.execute(query, self._params(session_id)).fetchall()
        return messages_from_rows(_decoded(rows), session_id)

    def count(self, session_id: str) -> int:
        with self._engine.read() as conn:
            row = conn.execute(sql.COUNT, (self._agent, encode(session_id))).fetchone()
        return int(row[0]) if row else 0

    def archived_seq(self, session_id: str) -> int:
        with self._engine.read() as conn:
            row = conn.execute(sql.SELECT_ARCHIVED_SEQ, (self._agent, encode(session_id)))
            found = row.fetchone()
        return int(found[0]) if found else 0

    def summary(self, session_id: str) -> str:
        with self._engine.read() as conn:
            row = conn.execute(sql.SELECT_SUMMARY, (self._agent, encode(session_id))).fetchone()
        return decode(row[0]) if row else ""

    def sessions(self) -> list[str]:
        with self._engine.read() as conn:
            return sorted(decode(r[0]) for r in conn.execute(sql.SESSIONS, (self._agent,)))

    def sessions_after(self, after: str | None, limit: int | None) -> list[str]:
        # text cannot hold NUL: the ids after `p + NUL + ...` are those after `p`
        start = (after or "").split("\x00", 1)[0]
        params = {"agent": self._agent, "after": start, "limit": limit}
        with self._engine.read() as conn:
            plain = [r[0] for r in conn.execute(sql.SESSIONS_AFTER, params)]
            escaped = [decode(r[0]) for r in conn.execute(sql.SESSIONS_ESCAPED, params)]
        if after is not None:
            escaped = [e for e in escaped if e > after]
        listed = sorted(plain + escaped) if escaped else plain
        return listed if limit is None else listed[:limit]

    def search_words(self, query: str, session_id: str | None, top_k: int) -> list[Message]:
        """Ranked in the server when every term is one lexeme and there are few; else the
        statistics and the candidates are read in one snapshot and ranked here."""
        terms = self.compiler.terms(query)
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
        return self._ranked_here(terms, params, session_id, top_k)

    def _ranked_here(
        self, terms: Sequence[Any], params: dict[str, Any], session_id: str | None, top_k: int
    ) -> list[Message]:
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


class PostgresHistoryStore(HistoryStoreFront):
    """`HistoryStore` over one agent's rows: the front over a `PostgresHistoryPort`."""

    def __init__(self, engine: Engine, embedder: Embedder | None = None) -> None:
        super().__init__(PostgresHistoryPort(engine, embedder))

    @property
    def vectors(self) -> MessageVectors | None:
        """The message vectors (internal: `stats()` counts the missing ones)."""
        port = self.port
        assert isinstance(port, PostgresHistoryPort)
        return port.vectors
