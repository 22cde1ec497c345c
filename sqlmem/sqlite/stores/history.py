"""Conversation history in SQLite: the history store front's port (`SQLiteHistoryPort`),
messages per session, a summary per session, search.

Storage model (schema in migrations/0001_initial.sql, SQL text in `history_sql`):

* `sessions(pk, session_id, unindexed, summary, last_seq, archived_seq, ...)`: each
  session owns its sequence counter and its archive boundary. Appends take seqs from
  `last_seq` inside the write transaction (an upsert with RETURNING), so seqs stay unique
  and gap-free with any number of threads and processes. Compaction only moves
  `archived_seq`: messages with `seq <= archived_seq` are archived, and no message row is
  rewritten. 0.2: `pop` deletes the newest active message and leaves `last_seq` alone (a
  seq is never handed out twice), so seqs may have holes; `holes` counts those in the
  active range, keeping `count` one row read (`history_archive` keeps it right when the
  boundary moves). `unindexed` marks sessions holding messages stored with history search off;
  the next open with search on indexes them (`index_unsearchable_messages`). A row
  whose `session_id` is a BLOB is a session being purged in chunks ("detached"): no read
  can name it, and `purge.finish_purges` deletes it with its messages.
* `messages(session, seq, role, content, ..., searchable, search_text)`: tool calls and
  metadata as compact JSON text, timestamps as unix milliseconds. `search_text` holds the
  segmented text when the content has scripts written without spaces (see
  `sqlmem.search.query.segment`), NULL otherwise.
* `messages_fts`: FTS5 over the searchable messages, kept in sync by triggers.
* `message_vectors` (with an embedder; `sqlite.message_vectors`): a vector per message with text,
  written in the append's transaction after the model ran outside it; forgotten with the
  message (ON DELETE CASCADE). Search modes "vector" and "hybrid" rank by them.

Search has mode "any" semantics (a message matches when it holds any query word). Like
fact search, it is the exact OR query on histories under 20,000 messages, for queries
without a common word and within one session; otherwise the rare/common-word split of
`sqlmem.sqlite.stores.fts_any` ranks the messages holding a rare word (common words only count for
messages that hold every word).

Every write is one `engine.write()` transaction; every read one statement on a reader
connection, so each result is a consistent snapshot. Arguments are checked by the front
(`sqlmem.stores.history`) before any call reaches this port.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import apsw

from ...config import StoreConfig
from ...errors import InvalidArgumentError
from ...records import Message
from ...rules.checks import encode_metadata, encode_tool_calls
from ...rules.encoding import dt_to_ms
from ...rules.rows import messages_from_read_rows, messages_from_rows
from ...search.query import segment
from ...stores.history import HistoryStoreFront, seqs_exhausted
from ...stores.history_port import VectorsPart
from ..core.engine import Engine
from ..core.purge import purge_session
from ..core.writer import Writer
from . import history_sql as sql
from .fts_any import AnyShortcut
from .history_archive import archive
from .history_search import search_words

if TYPE_CHECKING:
    from ...protocols import Embedder
    from ...search.embedding import Embedding
    from .message_vectors import MessageVectors, Prepared

__all__ = [
    "MAX_SEQ",
    "SQLiteHistoryPort",
    "SQLiteHistoryStore",
    "index_unsearchable_messages",
    "is_plain",
]

#: The largest seq a message can get: SQLite's largest integer. Appends never reach it in
#: practice; an imported seq can be at most `rules.export_format.MAX_IMPORTED_SEQ` (2**62), so
#: 2**62 appends always fit after an import. A session whose counter would pass it refuses
#: the append with nothing written (an imported 2**63-1 once made the next
#: append commit a float seq).
MAX_SEQ = sql.MAX_SEQ


def is_plain(message: Message) -> bool:
    """Text only: no name, tool call, error flag or metadata. Such a message is inserted
    binding fewer columns (history_sql._PLAIN_ROW)."""
    return not (
        message.name
        or message.tool_call_id
        or message.tool_calls
        or message.is_error
        or message.metadata
    )


def index_unsearchable_messages(writer: Writer, config: StoreConfig) -> None:
    """Index messages stored while history search was off, now that it is on (open hook).

    Appends with search off flag their session (`sessions.unindexed`) instead of keeping
    an index of unindexed messages, which cost a page write per append. The flag is read
    outside a transaction first, so an open with nothing to do never takes the write lock.
    """
    if not config.history_search or not writer.connection.execute(sql.ANY_UNINDEXED).fetchall():
        return
    with writer.transaction() as conn:
        conn.execute(sql.INDEX_UNSEARCHABLE)
        conn.execute(sql.CLEAR_UNINDEXED)


def _first(row: Sequence[Any]) -> Any:
    return row[0]


def _message_vectors(engine: Engine, embedding: Embedding) -> MessageVectors:
    from .message_vectors import MessageVectors  # numpy: only with an embedder

    return MessageVectors(engine, embedding)


class SQLiteHistoryPort(VectorsPart["MessageVectors"]):
    """The history store's storage operations over one database file (`HistoryPort`);
    thread-safe, shareable between processes.

    With `history_search=False` messages are stored unindexed (cheaper appends) and are
    indexed the next time the file is opened with search on.
    """

    def __init__(self, engine: Engine, embedder: Embedder | None = None) -> None:
        """`embedder`: every message with text gets a vector, and search offers modes
        "vector" and "hybrid" (`message_vectors`)."""
        super().__init__(engine.config, embedder, partial(_message_vectors, engine))
        self._engine = engine
        self._searchable = 1 if self._config.history_search else 0
        self._any = AnyShortcut(sql.ANY)

    @property
    def label(self) -> str:
        return f"SQLiteHistoryStore {str(self._engine.path)!r}"

    # -- writes ---------------------------------------------------------------------------

    def append(self, session_id: str, messages: Sequence[Message], now: int) -> list[int]:
        """Encode (failing before any transaction), embed (no lock held), then insert."""
        # One INSERT shape for the whole batch.
        plain = is_plain(messages[0]) if len(messages) == 1 else all(map(is_plain, messages))
        rows = [self._encode(m, now, plain) for m in messages]
        return self._insert(session_id, rows, now, plain, self._prepared(messages, now))

    def _encode(self, m: Message, now: int, plain: bool) -> tuple[Any, ...]:
        """Everything of a row but (session, seq), in the columns of the INSERT shape
        (`plain` or full, see history_sql); fails before any transaction starts."""
        created = now if m.created_at is None else dt_to_ms(m.created_at)
        if plain:
            return (m.role, m.content, created, self._searchable, segment(m.content))
        return (
            m.role,
            m.content,
            m.name,
            m.tool_call_id,
            encode_tool_calls(m.tool_calls),
            1 if m.is_error else 0,
            encode_metadata(m.metadata),
            created,
            self._searchable,
            segment(m.content),
        )

    def _insert(
        self,
        session_id: str,
        rows: list[tuple[Any, ...]],
        now: int,
        plain: bool,
        prepared: Prepared | None,
    ) -> list[int]:
        """One transaction: take len(rows) seqs, insert the rows, archive past the limit.

        Two statements besides BEGIN/COMMIT: the seq upsert and one multi-row INSERT per
        chunk (a single message uses a constant INSERT_ONE_*, no chunking work).
        """
        count = len(rows)
        try:
            with self._engine.write() as conn:
                # fetchall: a RETURNING statement must run to completion before the next one.
                try:
                    reserved: Sequence[int] = conn.execute(  # type: ignore[assignment]
                        sql.RESERVE_SEQS if self._searchable else sql.RESERVE_SEQS_UNINDEXED,
                        (session_id, count, now),
                    ).fetchall()[0]
                except apsw.ConstraintError as exc:  # the counter would pass MAX_SEQ
                    raise seqs_exhausted(session_id, count) from exc
                pk, last, archived, holes = reserved
                first = last - count + 1
                if count == 1:
                    conn.execute(
                        sql.INSERT_ONE_PLAIN if plain else sql.INSERT_ONE_FULL,
                        (pk, last, *rows[0]),
                    )
                else:
                    _insert_chunks(conn, pk, first, rows, plain)
                if prepared and self._vectors is not None:  # the message's own transaction
                    self._vectors.write(conn, pk, first, prepared)
                limit = self._config.max_history_len
                if limit is not None and last - archived - holes > limit:
                    archive(conn, (pk, last, archived, holes), limit, None)
        except UnicodeEncodeError:
            raise InvalidArgumentError(
                "message contains a lone surrogate, which UTF-8 cannot store; nothing was stored"
            ) from None
        return list(range(first, last + 1))

    def set_summary(self, session_id: str, text: str, now: int) -> None:
        with self._engine.write() as conn:
            conn.execute(sql.SET_SUMMARY, (session_id, text, now))

    def compact(self, session_id: str, keep_last: int, summary: str | None, now: int) -> int:
        with self._engine.write() as conn:
            state: Sequence[Sequence[Any]] = conn.execute(
                sql.SELECT_SESSION, (session_id,)
            ).fetchall()
            if not state:
                if summary is not None:
                    conn.execute(sql.SET_SUMMARY, (session_id, summary, now))
                return 0
            pk, last, archived, holes = (int(v) for v in state[0])
            return archive(conn, (pk, last, archived, holes), keep_last, summary)

    def pop(self, session_id: str, now: int) -> Message | None:
        """The session's counter stays, so the next append gets the next number (also
        after a reopen), and the hole it leaves is counted (`sessions.holes`) so `count`
        stays one row read."""
        with self._engine.write() as conn:
            state: Sequence[Sequence[Any]] = conn.execute(
                sql.SELECT_SESSION, (session_id,)
            ).fetchall()
            if not state:
                return None
            pk, archived = state[0][0], state[0][2]
            rows = conn.execute(sql.POP, (pk, archived)).fetchall()
            if not rows:
                return None
            conn.execute(sql.POPPED, (pk, now))
        return messages_from_rows(rows, session_id)[0]

    def purge(self, session_id: str) -> None:
        """The session is gone for every read (and a new one of the same id can start) as
        soon as the first transaction commits. A session of more than
        `purge.PURGE_CHUNK_ROWS` messages is detached there and its rows deleted in chunks,
        each its own short write transaction, so other writers wait for one chunk at most
        (see history_sql's purge notes). The call returns when everything is deleted,
        including what an interrupted earlier purge left. If a chunk fails
        (`StorageBusyError` past the busy timeout, a crash), the session stays gone for
        every read and the next purge or `vacuum()` deletes the rest.
        """
        purge_session(self._engine, session_id)

    # -- reads ----------------------------------------------------------------------------

    def recent(self, session_id: str, n: int) -> list[Message]:
        with self._engine.read() as conn:
            rows = conn.execute(sql.READ_RECENT, (session_id, n)).fetchall()
        rows.reverse()
        return messages_from_read_rows(rows, session_id)

    def around(self, session_id: str, seq: int, before: int, after: int) -> list[Message]:
        """One statement, so one snapshot."""
        with self._engine.read() as conn:
            rows = conn.execute(sql.AROUND, (session_id, seq, before + 1, after)).fetchall()
        rows.sort(key=_first)  # at most before + 1 + after rows, newest-first in part
        return messages_from_rows(rows, session_id)

    def all(self, session_id: str, include_archived: bool) -> list[Message]:
        query = sql.READ_ALL if include_archived else sql.READ_ALL_ACTIVE
        with self._engine.read() as conn:
            rows = conn.execute(query, (session_id,)).fetchall()
        return messages_from_read_rows(rows, session_id)

    def count(self, session_id: str) -> int:
        """One row read: last_seq - archived_seq - holes."""
        with self._engine.read() as conn:
            value = conn.execute(sql.COUNT, (session_id,)).get
        return int(value or 0)

    def archived_seq(self, session_id: str) -> int:
        with self._engine.read() as conn:
            value = conn.execute(sql.SELECT_ARCHIVED_SEQ, (session_id,)).get
        return int(value or 0)

    def summary(self, session_id: str) -> str:
        with self._engine.read() as conn:
            value = conn.execute(sql.SELECT_SUMMARY, (session_id,)).get
        return str(value) if value is not None else ""

    def sessions(self) -> list[str]:
        with self._engine.read() as conn:
            return [row[0] for row in conn.execute(sql.SESSIONS)]

    def sessions_after(self, after: str | None, limit: int | None) -> list[str]:
        params = {"after": after or "", "limit": -1 if limit is None else limit}
        with self._engine.read() as conn:
            return [row[0] for row in conn.execute(sql.SESSIONS_AFTER, params)]

    def search_words(self, query: str, session_id: str | None, top_k: int) -> list[Message]:
        """`score` is the negated FTS5 bm25. On large histories the result may leave out
        messages made only of common words, and rank a message that holds some of the
        common words by its rare words (`sqlmem.sqlite.stores.fts_any`)."""
        return search_words(self._engine, self._any, query, session_id, top_k)


class SQLiteHistoryStore(HistoryStoreFront):
    """`HistoryStore` over one database file: the front over a `SQLiteHistoryPort`."""

    def __init__(self, engine: Engine, embedder: Embedder | None = None) -> None:
        super().__init__(SQLiteHistoryPort(engine, embedder))
        self._engine = engine


def _insert_chunks(
    conn: apsw.Connection, pk: int, first: int, rows: list[tuple[Any, ...]], plain: bool
) -> None:
    """As few multi-row INSERTs as sql.chunk_sizes allows (FTS5 flushes once per statement)."""
    done = 0
    for size in sql.chunk_sizes(len(rows)):
        values: list[Any] = []
        for offset in range(done, done + size):
            values.append(pk)
            values.append(first + offset)
            values.extend(rows[offset])
        conn.execute(sql.insert_messages_sql(size, plain), values)
        done += size
