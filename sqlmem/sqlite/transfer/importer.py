"""Import of an export (rules/export_format.py) into a SQLite memory database: the import
front (`sqlmem.stores.transfer`, which states the merge) over `SQLiteImportPort`.

Direct SQL is needed because the history store's public API assigns seqs, timestamps and
the archive boundary itself; restoring them exactly is this port's whole job. Seqs are
taken as given, so a hand-made file must number each session 1, 2, 3 ... without gaps,
as exports do (the history store counts active messages as last_seq - archived_seq).
Seqs and archive boundaries go up to `MAX_IMPORTED_SEQ` (2**62), which leaves room for
2**62 appends. Every statement is a constant with bound values (history_transfer_sql.py,
facts_sql.py), run through the engine's writer, one transaction per batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ...records import Fact
from ...rules.checks import encode_metadata, encode_tool_calls
from ...rules.encoding import dt_to_ms, dumps_json, now_ms
from ...rules.export_format import (
    BlobRow,
    DocumentRow,
    ExportStream,
    ImportCounts,
    MessageRow,
    MessageVectorRow,
    Progress,
    RevisionRow,
    Row,
    SummaryRow,
    VectorRow,
    read_export,
    read_records,
)
from ...rules.import_merge import StoredFact
from ...search.query import segment
from ...stores.transfer import import_into
from ..stores.chains import link_supersessions
from ..stores.facts_sql import IMPORT_STORED_FACT
from ..stores.history_sql import SELECT_SUMMARY
from .docs_transfer import import_document, import_revision
from .history_transfer_sql import IMPORT_MESSAGE, IMPORT_SESSION, RECOUNT_HOLES
from .kv_transfer import import_blob_row
from .message_vectors_transfer import import_message_vector
from .vectors_transfer import import_vector

if TYPE_CHECKING:
    import apsw

    from ..db import MemoryDB

__all__ = [
    "BATCH_SIZE",
    "SQLiteImportPort",
    "import_lines",
    "import_records",
    "import_stream",
]

#: Records per transaction (read at each import, so tests can make batches small).
BATCH_SIZE = 1000


def import_lines(
    db: MemoryDB, lines: Iterable[bytes | str], progress: Progress | None = None
) -> ImportCounts:
    """Import an export file given as its lines; see `read_export`."""
    return import_stream(db, read_export(lines), progress)


def import_records(
    db: MemoryDB, records: Iterable[Mapping[str, Any]], progress: Progress | None = None
) -> ImportCounts:
    """Import records as `export_records` yields them, header first.

    Errors name the 1-based position of the bad record.
    """
    return import_stream(db, read_records(records), progress)


def import_stream(
    db: MemoryDB, stream: ExportStream, progress: Progress | None = None
) -> ImportCounts:
    """Write the stream's records into `db`, `BATCH_SIZE` records per transaction."""
    return import_into(SQLiteImportPort(db), stream, progress, BATCH_SIZE)


class SQLiteImportPort:
    """A SQLite memory database as an import target (`ImportPort`)."""

    def __init__(self, db: MemoryDB) -> None:
        self._db = db

    @contextmanager
    def batch(self, rows: Sequence[Row]) -> Iterator[SQLiteImportBatch]:
        with self._db.engine.write() as conn:
            yield SQLiteImportBatch(self._db, conn)

    @property
    def database(self) -> MemoryDB:
        return self._db


class SQLiteImportBatch:
    """One batch's writes in the caller's transaction (`ImportBatch`)."""

    def __init__(self, db: MemoryDB, conn: apsw.Connection) -> None:
        self._db = db
        self._conn = conn
        self._now = now_ms()
        self._searchable = 1 if db.config.history_search else 0
        self._sessions: set[int] = set()  # touched: their popped seqs are counted again

    def message(self, row: MessageRow, counts: ImportCounts) -> None:
        """Upsert the message's session, insert the message."""
        conn, now = self._conn, self._now
        session: Any = conn.execute(
            IMPORT_SESSION,
            {
                "session_id": row.session_id,
                # Messages imported with history search off wait for the next open with it
                # on, like appended ones (see history.index_unsearchable_messages).
                "unindexed": 1 - self._searchable,
                "summary": "",
                "has_summary": 0,
                "last_seq": row.seq,
                "archived_seq": row.seq if row.archived else 0,
                "now": now,
            },
        ).fetchall()[0][0]
        message = row.message
        created = now if message.created_at is None else dt_to_ms(message.created_at)
        conn.execute(
            IMPORT_MESSAGE,
            (
                session,
                row.seq,
                message.role,
                message.content,
                message.name,
                message.tool_call_id,
                encode_tool_calls(message.tool_calls),
                int(message.is_error),
                encode_metadata(message.metadata),
                created,
                self._searchable,
                segment(message.content),
            ),
        )
        if conn.changes():
            counts.messages += 1
        else:
            counts.messages_skipped += 1
        self._sessions.add(int(session))

    def summary(self, row: SummaryRow, counts: ImportCounts) -> None:
        """Upsert the session's summary and boundary."""
        before = self._conn.execute(SELECT_SUMMARY, (row.session_id,)).fetchall()
        stored: Any = self._conn.execute(
            IMPORT_SESSION,
            {
                "session_id": row.session_id,
                "unindexed": 0,
                "summary": row.summary,
                "has_summary": 1 if row.summary else 0,
                "last_seq": row.archived_seq,
                "archived_seq": row.archived_seq,
                "now": self._now,
            },
        ).fetchall()[0]
        pk, after = stored
        if row.summary and (not before or before[0][0] != after):
            counts.summaries += 1
        self._sessions.add(int(pk))

    def document(self, row: DocumentRow, counts: ImportCounts) -> None:
        import_document(self._conn, row, self._db.config.doc_revisions, counts)

    def revision(self, row: RevisionRow, counts: ImportCounts) -> None:
        import_revision(self._conn, row, self._db.config.doc_revisions, counts)

    def message_vector(self, row: MessageVectorRow, counts: ImportCounts) -> None:
        import_message_vector(self._conn, row, counts)

    def blob(self, row: BlobRow, counts: ImportCounts) -> None:
        import_blob_row(self._conn, row, self._now, counts)

    def sessions_done(self) -> None:
        if self._sessions:
            self._conn.execute(RECOUNT_HOLES, (dumps_json(sorted(self._sessions)),))
            self._sessions.clear()

    def stored_fact(self, fact_id: str) -> StoredFact | None:
        found: list[Any] = self._conn.execute(IMPORT_STORED_FACT, (fact_id,)).fetchall()
        if not found:
            return None
        r = found[0]
        return StoredFact(tuple(r[:12]), r[12], r[13], r[14], int(r[15]))

    def write_facts(self, facts: Sequence[Fact]) -> None:
        self._db.facts.restore_many(facts)  # nested: a savepoint of this transaction
        link_supersessions(self._conn, [(f.id, f.superseded_by) for f in facts if not f.key])

    def vector(self, row: VectorRow, counts: ImportCounts) -> None:
        import_vector(self._conn, row, counts)
