"""The import port once for the two SQL backends: `SqlImportPort` and `SqlImportBatch`.

The import front (`stores.transfer`) decides what is written; a batch writes it in one
transaction. Merging a message's session, inserting the message unless its (session,
seq) is there, merging a summary with its boundary, and recounting the touched sessions'
holes are the same Python on SQLite and PostgreSQL over each dialect's statements
(`ImportStatements`, bound by name as in `sql_port`); each backend subclasses these with
the rest (a message's stored columns, documents, framework records, facts and their
vectors), which its storage writes its own way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Generic, Protocol, TypeVar

from ..records import Message
from ..rules.encoding import now_ms
from ..rules.export_format import ImportCounts, MessageRow, Row, SummaryRow
from .sql_port import SqlEngine, first_value

__all__ = ["ImportStatements", "SqlImportBatch", "SqlImportPort"]

B = TypeVar("B", bound="SqlImportBatch")
D = TypeVar("D")


class ImportStatements(Protocol):
    """A dialect's import statements (values bound by name)."""

    #: Merge a session (counter and boundary only move forward; see each dialect's text);
    #: returns (ref, summary): what its messages point at, and the summary it now has.
    IMPORT_SESSION: str
    #: A message unless its (session, seq) is there (`_added` tells which).
    IMPORT_MESSAGE: str
    SELECT_SUMMARY: str
    #: The touched sessions (`sessions`, the codec's array of refs) count their holes again.
    RECOUNT_HOLES: str


class SqlImportBatch:
    """One batch's writes in the caller's transaction (`ImportBatch`, completed by the
    backend's subclass)."""

    def __init__(
        self,
        conn: Any,
        statements: ImportStatements,
        agent: str | None,
        text: Callable[[str], str],
        array: Callable[[list[Any]], Any],
    ) -> None:
        self._conn = conn
        self._sql = statements
        self._agent = agent
        self._text = text
        self._array = array
        self._now = now_ms()
        #: Messages imported with history search off wait for the next open with it on,
        #: like appended ones (SQLite; a PostgreSQL message is always indexed).
        self._unindexed = 0
        self._sessions: set[Any] = set()  # touched: their popped seqs are counted again

    def _session(
        self, session_id: str, last: int, archived: int, summary: str, unindexed: int
    ) -> Any:
        """Merge the session; returns (ref, the summary it now has)."""
        params = {
            "agent": self._agent,
            "session": self._text(session_id),
            "unindexed": unindexed,
            "summary": self._text(summary),
            "has_summary": bool(summary),
            "last": last,
            "archived": archived,
            "now": self._now,
        }
        return self._conn.execute(self._sql.IMPORT_SESSION, params).fetchall()[0]

    def message(self, row: MessageRow, counts: ImportCounts) -> None:
        """Merge the message's session, insert the message."""
        archived = row.seq if row.archived else 0
        ref = self._session(row.session_id, row.seq, archived, "", self._unindexed)[0]
        params = self._message_params(ref, row.seq, row.message)
        if self._added(self._conn.execute(self._sql.IMPORT_MESSAGE, params)):
            counts.messages += 1
            self._message_added(params)
        else:
            counts.messages_skipped += 1
        self._sessions.add(ref)

    def _message_params(self, ref: Any, seq: int, message: Message) -> Any:
        """IMPORT_MESSAGE's values for the message at `seq` of the session `ref`: the
        hot loop of an import, so each dialect binds them its cheapest way (SQLite: in
        the statement's order)."""
        raise NotImplementedError

    def _added(self, cursor: Any) -> bool:
        """Whether IMPORT_MESSAGE added its row, as the driver tells it (no row returned
        to fetch: SQLite counts changes, psycopg a cursor's rowcount)."""
        raise NotImplementedError

    def _message_added(self, params: Any) -> None:
        """After a message was added (PostgreSQL counts it for its statistics)."""

    def summary(self, row: SummaryRow, counts: ImportCounts) -> None:
        """Merge the session's summary and boundary."""
        params = {"agent": self._agent, "session": self._text(row.session_id)}
        before = first_value(self._conn.execute(self._sql.SELECT_SUMMARY, params))
        seq = row.archived_seq
        ref, after = self._session(row.session_id, seq, seq, row.summary, 0)
        if row.summary and before != after:
            counts.summaries += 1
        self._sessions.add(ref)

    def sessions_done(self) -> None:
        self._messages_done()
        if self._sessions:
            params = {"agent": self._agent, "sessions": self._array(sorted(self._sessions))}
            self._conn.execute(self._sql.RECOUNT_HOLES, params)
            self._sessions.clear()

    def _messages_done(self) -> None:
        """After the batch's messages (PostgreSQL adds them to its statistics)."""


class SqlImportPort(Generic[D, B]):
    """A SQL database as an import target (`ImportPort`): one write transaction per
    batch, the backend's batch inside it."""

    def __init__(self, db: D, engine: SqlEngine) -> None:
        self._db = db
        self._engine = engine

    @contextmanager
    def batch(self, rows: Sequence[Row]) -> Iterator[B]:
        with self._engine.write() as conn:
            yield self._batch(conn, rows)

    def _batch(self, conn: Any, rows: Sequence[Row]) -> B:
        """The batch over `conn`, the transaction's first statements run."""
        raise NotImplementedError

    @property
    def database(self) -> D:
        return self._db
