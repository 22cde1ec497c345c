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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...records import Fact, Message
from ...rules.checks import encode_metadata, encode_tool_calls
from ...rules.encoding import dt_to_ms, dumps_json
from ...rules.export_format import (
    BlobRow,
    DocumentRow,
    ImportCounts,
    MessageVectorRow,
    RevisionRow,
    Row,
    VectorRow,
)
from ...rules.import_merge import StoredFact
from ...search.query import segment
from ...stores.sql_import import SqlImportBatch, SqlImportPort
from ...stores.sql_port import plain_text
from ...stores.transfer import Importers
from ..stores.chains import link_supersessions
from ..stores.facts_sql import IMPORT_STORED_FACT
from . import history_transfer_sql
from .docs_transfer import import_document, import_revision
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


class SQLiteImportPort(SqlImportPort["MemoryDB", "SQLiteImportBatch"]):
    """A SQLite memory database as an import target (`ImportPort`)."""

    def __init__(self, db: MemoryDB) -> None:
        super().__init__(db, db.engine)

    def _batch(self, conn: apsw.Connection, rows: Sequence[Row]) -> SQLiteImportBatch:
        return SQLiteImportBatch(self._db, conn)


def _batch_size() -> int:
    return BATCH_SIZE


_IMPORTERS = Importers(SQLiteImportPort, _batch_size)
import_lines = _IMPORTERS.import_lines
import_records = _IMPORTERS.import_records
import_stream = _IMPORTERS.import_stream


class SQLiteImportBatch(SqlImportBatch):
    """One batch's writes in the caller's transaction (`ImportBatch`); sessions are
    referred to by their row's pk, and a batch's touched sessions go to the recount as
    one JSON array."""

    def __init__(self, db: MemoryDB, conn: apsw.Connection) -> None:
        super().__init__(conn, history_transfer_sql, None, plain_text, dumps_json)
        self._db = db
        self._searchable = 1 if db.config.history_search else 0
        # Messages imported with history search off wait for the next open with it on,
        # like appended ones (see history.index_unsearchable_messages).
        self._unindexed = 1 - self._searchable

    def _added(self, cursor: apsw.Cursor) -> bool:
        return bool(self._conn.changes())

    def _message_params(self, ref: int, seq: int, message: Message) -> tuple[Any, ...]:
        created = self._now if message.created_at is None else dt_to_ms(message.created_at)
        return (
            ref,
            seq,
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
        )

    def document(self, row: DocumentRow, counts: ImportCounts) -> None:
        import_document(self._conn, row, self._db.config.doc_revisions, counts)

    def revision(self, row: RevisionRow, counts: ImportCounts) -> None:
        import_revision(self._conn, row, self._db.config.doc_revisions, counts)

    def message_vector(self, row: MessageVectorRow, counts: ImportCounts) -> None:
        import_message_vector(self._conn, row, counts)

    def blob(self, row: BlobRow, counts: ImportCounts) -> None:
        import_blob_row(self._conn, row, self._now, counts)

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
