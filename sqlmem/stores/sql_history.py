"""`SqlHistoryPort`: the history port once for the two SQL backends.

A session's summary, its archive boundary (compact, `max_history_len`), pop and every
read but search are the same Python on SQLite and PostgreSQL: one transaction, constant
statements, rows turned into messages. This class holds that Python; each backend
subclasses it with what genuinely differs (the append, which SQLite writes as multi-row
INSERTs feeding FTS5 and PostgreSQL as one statement keeping its BM25 statistics; purge;
word search), and hands it its statements (`HistoryStatements`, the same names in
`sqlite/stores/history_sql.py` and `postgres/history_sql.py`) and its codec.

Values are bound by name (`sql_port`). `session` is the session id as stored; `ref` is
what the session's messages point at, the first column of `SELECT_SESSION` (SQLite: the
session row's pk; PostgreSQL: the session id again, next to `agent`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Protocol, TypeVar

from ..records import Message
from ..rules.encoding import now_ms
from ..rules.window import archive_boundary
from .history_port import MessageVectorStore, VectorsPart
from .sql_port import SqlConnection, SqlEngine, first_value

__all__ = ["HistoryCodec", "HistoryStatements", "SqlHistoryPort"]

#: A message row's columns (`MESSAGE_COLUMNS`): what POP returns first.
_MESSAGE_WIDTH = 9
_seq_of = itemgetter(0)

V = TypeVar("V", bound=MessageVectorStore)


class HistoryStatements(Protocol):
    """The statements a dialect's `history_sql` module provides to the shared port."""

    SELECT_SESSION: str  # (ref, last_seq, archived_seq, holes), the row locked for writing
    SET_SUMMARY: str
    READ_RECENT: str  # newest first, in the codec's read shape
    READ_ALL: str
    READ_ALL_ACTIVE: str
    AROUND: str  # MESSAGE_COLUMNS rows
    COUNT: str
    SELECT_SUMMARY: str
    SELECT_ARCHIVED_SEQ: str
    SESSIONS: str
    OLDEST_KEPT: str
    FIRST_NON_TOOL_AT_OR_BEFORE: str
    COUNT_RANGE: str
    ARCHIVE: str
    POP: str  # MESSAGE_COLUMNS, then whatever the dialect's `_popped` needs
    POPPED: str


@dataclass(frozen=True, slots=True)
class HistoryCodec:
    """How a dialect stores text and reads rows back.

    `text`/`untext`: a value as stored and back (PostgreSQL escapes NUL, `postgres.codec`;
    SQLite stores text as it is). `read_messages`: rows of READ_RECENT/READ_ALL;
    `messages`: MESSAGE_COLUMNS rows.
    """

    text: Callable[[str], str]
    untext: Callable[[str], str]
    read_messages: Callable[[list[Any], str], list[Message]]
    messages: Callable[[list[Any], str], list[Message]]


class SqlHistoryPort(VectorsPart[V]):
    """The history port's operations both SQL backends share (`HistoryPort` once the
    backend adds `label`, `append`, `purge` and `search_words`); thread-safe."""

    def __init__(
        self,
        engine: SqlEngine,
        statements: HistoryStatements,
        codec: HistoryCodec,
        agent: str | None,
        embedder: Any,
        vectors_of: Callable[[Any], V],
    ) -> None:
        super().__init__(engine.config, embedder, vectors_of)
        self._engine = engine
        self._sql = statements
        self._codec = codec
        self._text = codec.text
        self._agent = agent

    def _params(self, session_id: str, **values: Any) -> dict[str, Any]:
        values["agent"] = self._agent
        values["session"] = self._text(session_id)
        return values

    # -- writes ---------------------------------------------------------------------------

    def set_summary(self, session_id: str, text: str, now: int) -> None:
        params = self._params(session_id, summary=self._codec.text(text), now=now)
        with self._engine.write() as conn:
            conn.execute(self._sql.SET_SUMMARY, params)

    def compact(self, session_id: str, keep_last: int, summary: str | None, now: int) -> int:
        stored = None if summary is None else self._codec.text(summary)
        params = self._params(session_id, summary=stored, now=now)
        with self._engine.write() as conn:
            state = conn.execute(self._sql.SELECT_SESSION, params).fetchall()
            if not state:
                if stored is not None:
                    conn.execute(self._sql.SET_SUMMARY, params)
                return 0
            ref, last, archived, holes = state[0]
            state_values = (int(last), int(archived), int(holes))
            return self._archive(conn, ref, state_values, keep_last, stored)

    def _archive(
        self,
        conn: SqlConnection,
        ref: Any,
        state: tuple[int, int, int],
        keep: int,
        summary: str | None,
    ) -> int:
        """Archive every active message but the newest `keep` (pair-safe, `rules.window`),
        storing `summary` (as stored) if given, inside the caller's write transaction.
        `state` is the session row's (last_seq, archived_seq, holes). Returns how many
        messages were archived.

        Seqs were gap-free until 0.2's `pop`; a pop never hands its seq out again, so a
        session may have holes (`holes` counts those in the active range). Sessions
        without holes keep the arithmetic; with holes the oldest kept message is found
        by walking back `keep` rows, and what the move archived is counted, so the holes
        it passed come off the counter in the same transaction.
        """
        sql = self._sql
        last, archived, holes = state
        params: dict[str, Any] = {"agent": self._agent, "ref": ref, "archived": archived}
        if holes == 0 or keep <= 0:
            wanted = last - keep
        else:
            oldest = first_value(conn.execute(sql.OLDEST_KEPT, {**params, "offset": keep - 1}))
            wanted = archived if oldest is None else int(oldest) - 1  # keep >= active: none

        def call_at_or_before(seq: int) -> int | None:
            found = conn.execute(sql.FIRST_NON_TOOL_AT_OR_BEFORE, {**params, "seq": seq})
            kept = first_value(found)
            return None if kept is None else int(kept)

        new = archive_boundary(archived, last, wanted, call_at_or_before)
        moved = new - archived
        params["boundary"] = new
        if holes and moved:
            moved = int(first_value(conn.execute(sql.COUNT_RANGE, params)))
        if new != archived or summary is not None:
            params.update(summary=summary, now=now_ms(), passed=new - archived - moved)
            conn.execute(sql.ARCHIVE, params)
        return moved

    def pop(self, session_id: str, now: int) -> Message | None:
        """The session's counter stays, so the next append gets the next number (also
        after a reopen), and the hole it leaves is counted (`holes`) so `count` stays
        one row read."""
        params = self._params(session_id, now=now)
        with self._engine.write() as conn:
            self._writing_messages(conn)
            state = conn.execute(self._sql.SELECT_SESSION, params).fetchall()
            if not state:
                return None
            params["ref"], params["archived"] = state[0][0], state[0][2]
            rows = conn.execute(self._sql.POP, params).fetchall()
            if not rows:
                return None
            conn.execute(self._sql.POPPED, params)
            self._popped(conn, rows[0])
        return self._codec.messages([rows[0][:_MESSAGE_WIDTH]], session_id)[0]

    def _writing_messages(self, conn: Any) -> None:
        """Before a write that removes messages (PostgreSQL locks its statistics first)."""

    def _popped(self, conn: Any, row: Sequence[Any]) -> None:
        """After the pop removed `row` (PostgreSQL takes it off its statistics)."""

    # -- reads ----------------------------------------------------------------------------

    def recent(self, session_id: str, n: int) -> list[Message]:
        params = self._params(session_id, limit=n)
        with self._engine.read() as conn:
            rows = conn.execute(self._sql.READ_RECENT, params).fetchall()
        rows.reverse()
        return self._codec.read_messages(rows, session_id)

    def around(self, session_id: str, seq: int, before: int, after: int) -> list[Message]:
        """One statement, so one snapshot."""
        params = self._params(session_id, seq=seq, before=before + 1, after=after)
        with self._engine.read() as conn:
            rows = conn.execute(self._sql.AROUND, params).fetchall()
        rows.sort(key=_seq_of)  # at most before + 1 + after rows, newest-first in part
        return self._codec.messages(rows, session_id)

    def all(self, session_id: str, include_archived: bool) -> list[Message]:
        sql, params = self._sql, self._params(session_id)
        with self._engine.read() as conn:
            found = conn.execute(sql.READ_ALL if include_archived else sql.READ_ALL_ACTIVE, params)
            rows = found.fetchall()
        return self._codec.read_messages(rows, session_id)

    def count(self, session_id: str) -> int:
        """One row read: last_seq - archived_seq - holes."""
        params = {"agent": self._agent, "session": self._text(session_id)}
        with self._engine.read() as conn:
            rows = conn.execute(self._sql.COUNT, params).fetchall()
        return int(rows[0][0]) if rows else 0

    def archived_seq(self, session_id: str) -> int:
        params = {"agent": self._agent, "session": self._text(session_id)}
        with self._engine.read() as conn:
            value = first_value(conn.execute(self._sql.SELECT_ARCHIVED_SEQ, params))
        return int(value or 0)

    def summary(self, session_id: str) -> str:
        params = self._params(session_id)
        with self._engine.read() as conn:
            value = first_value(conn.execute(self._sql.SELECT_SUMMARY, params))
        return "" if value is None else self._codec.untext(value)

    def sessions(self) -> list[str]:
        """Sorted here: PostgreSQL's escaped ids do not sort in SQL."""
        untext = self._codec.untext
        with self._engine.read() as conn:
            rows = conn.execute(self._sql.SESSIONS, {"agent": self._agent}).fetchall()
        return sorted(untext(row[0]) for row in rows)
