"""Export and import of one PostgreSQL agent, in the SQLite export's format
(`sqlmem.rules.export_format`), so an agent moves between backends:

    from sqlmem.postgres.transfer import export_records, import_records
    from sqlmem.sqlite import export as sqlite_export
    import_records(pg_db, sqlite_export.export_records(sqlite_db))   # SQLite -> PostgreSQL
    sqlite_import.import_records(sqlite_db, export_records(pg_db))   # and back

The export is the same records in the same order as the SQLite file's (messages by session
then seq, summaries, message vectors, live facts oldest first, their vectors, then the
workspace documents and their kept revisions: `docs_transfer`, which orders them by path);
import is the import front's merge keyed by identity (`sqlmem.stores.transfer`, idempotent:
importing twice adds nothing; counters and archive boundaries only move forward; of two
records of one fact the later `updated_at` wins; of a document, the higher revision), batch
by batch, each batch one transaction, every record validated by the shared rules before its
batch is written.
The BM25 statistics (`corpus_stats`) of messages, facts and document blocks are kept exact
in the same transactions.

The frameworks' records of format version 2 (the kv rows of the LangChain/LangGraph
stores, LangGraph checkpoints and their pending writes) go to the agent's own tables, with
the SQLite file's merge (`sqlmem.postgres.kv_transfer`), and an export carries them.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..records import Fact, Message
from ..rules.encoding import dt_to_ms, now_ms
from ..rules.export_format import (
    BlobRow,
    DocumentRow,
    ImportCounts,
    MessageRow,
    MessageVectorRow,
    Progress,
    RevisionRow,
    Row,
    SummaryRow,
    VectorRow,
    chain_fields,
    iso_ms,
)
from ..rules.export_records import message_record, paged, summary_record
from ..rules.filters import prepare_fact
from ..rules.import_merge import StoredFact, stored_fact_of
from ..rules.rows import facts_from_rows
from ..search.query import QueryCompiler, compiler_for
from ..stores.sql_import import SqlImportBatch, SqlImportPort
from ..stores.transfer import Importers, export_from
from . import facts_sql, vectors_sql
from . import transfer_sql as sql
from .chains import link_supersessions
from .codec import decode, encode
from .corpus_sql import LOCK_CORPUS, MESSAGES, UPDATE_STATS
from .docs_sql import DOCUMENTS
from .docs_transfer import export_documents, import_document, import_revision
from .engine import Conn
from .fact_params import decoded
from .history import message_row
from .history_sql import APPEND_COLUMNS
from .kv_transfer import export_framework_records, import_framework_row
from .message_vectors_transfer import (
    export_message_vectors,
    has_message_vectors,
    import_message_vector,
)

if TYPE_CHECKING:
    from . import PostgresDB

__all__ = [
    "BATCH_SIZE",
    "PostgresExportPort",
    "PostgresImportPort",
    "export_records",
    "import_lines",
    "import_records",
    "import_stream",
]

BATCH_SIZE = 1000


# -- export ----------------------------------------------------------------------------------


def export_records(db: PostgresDB, progress: Progress | None = None) -> Iterator[dict[str, Any]]:
    """The header, then every message, session summary, live fact, fact vector, document,
    kept revision, live kv row, checkpoint and pending write of the agent, as dicts; pages
    by key, each its own short read. `progress(n)` is called every 10,000 records."""
    return export_from(PostgresExportPort(db), progress)


class PostgresExportPort:
    """One PostgreSQL agent as an export source (`ExportPort`)."""

    def __init__(self, db: PostgresDB) -> None:
        self._db = db

    def header(self) -> tuple[int, bool]:
        agent = self._db.agent_id
        with self._db._engine.read() as conn:
            row = conn.execute("SELECT max(version) FROM sqlmem_schema_version").fetchone()
            changing = conn.execute(sql.ANY_CHANGING, (agent, agent)).fetchone()
        return (int(row[0]) if row and row[0] is not None else 0), changing is not None

    def has_message_vectors(self) -> bool:
        return has_message_vectors(self._db)

    def parts(self, message_vectors: bool) -> Sequence[Iterator[dict[str, Any]]]:
        db = self._db
        return (
            _messages(db), _summaries(db),
            export_message_vectors(db) if message_vectors else iter(()),
            _facts(db), _vectors(db), export_documents(db), export_framework_records(db),
        )  # fmt: skip


def _messages(db: PostgresDB) -> Iterator[dict[str, Any]]:
    def read(after: tuple[str, int], page: int) -> list[Any]:
        with db._engine.read() as conn:
            return conn.execute(sql.EXPORT_MESSAGES_PAGE, (db.agent_id, *after, page)).fetchall()

    for r in paged(read, ("", 0), _session_and_seq):
        yield message_record((decode(r[0]), r[1], r[2], r[3], decode(r[4]), decode(r[5]),
                              decode(r[6]), *r[7:]))  # fmt: skip


def _session_and_seq(row: Sequence[Any]) -> tuple[str, int]:
    return (row[0], row[1])


def _summaries(db: PostgresDB) -> Iterator[dict[str, Any]]:
    def read(after: str, page: int) -> list[Any]:
        with db._engine.read() as conn:
            return conn.execute(sql.EXPORT_SESSIONS_PAGE, (db.agent_id, after, page)).fetchall()

    for session_id, summary, archived_seq in paged(read, "", _first):
        yield summary_record(decode(session_id), decode(summary), archived_seq)


def _first(row: Sequence[Any]) -> Any:
    return row[0]


def _facts(db: PostgresDB) -> Iterator[dict[str, Any]]:
    def read(after: int, page: int) -> list[Any]:
        with db._engine.read() as conn:
            params = {"agent": db.agent_id, "after": after, "limit": page, "now": now_ms()}
            return conn.execute(sql.EXPORT_FACTS_PAGE, params).fetchall()

    for row in paged(read, 0, _first):
        yield _fact_record(facts_from_rows(decoded([row[1:]]), ranked=False)[0])


def _fact_record(f: Fact) -> dict[str, Any]:
    assert f.created_at is not None and f.updated_at is not None  # stored facts have both
    return {
        "type": "fact",
        "id": f.id,
        "content": f.content,
        "source": f.source,
        "tags": f.tags,
        "category": f.category,
        "metadata": f.metadata,
        "created_at": iso_ms(f.created_at),
        "updated_at": iso_ms(f.updated_at),
        "layer": f.layer,
        "kind": f.kind,
        "confidence": f.confidence,
        "salience": f.salience,
        "references": f.references,
        "expires_at": None if f.expires_at is None else iso_ms(f.expires_at),
        "fingerprint": f.fingerprint,
        "hits": f.hits,
        **chain_fields(f.key, _ms(f.valid_from), _ms(f.valid_to), f.superseded_by),
    }


def _ms(value: datetime | None) -> int | None:
    return None if value is None else dt_to_ms(value)


def _vectors(db: PostgresDB) -> Iterator[dict[str, Any]]:
    def read(after: int, page: int) -> list[Any]:
        with db._engine.read() as conn:
            params = {"agent": db.agent_id, "after": after, "limit": page, "now": now_ms()}
            return conn.execute(sql.EXPORT_VECTORS_PAGE, params).fetchall()

    for _, fact_id, model, dim, vector in paged(read, 0, _first):
        data = base64.b64encode(bytes(vector)).decode("ascii")
        yield {"type": "vector", "id": decode(fact_id), "model": model, "dim": dim,
               "data": data}  # fmt: skip


# -- import ----------------------------------------------------------------------------------


class PostgresImportPort(SqlImportPort["PostgresDB", "PostgresImportBatch"]):
    """One PostgreSQL agent as an import target (`ImportPort`)."""

    def __init__(self, db: PostgresDB) -> None:
        super().__init__(db, db._engine)
        self._compiler = compiler_for(db.config.tokenizer)

    def _batch(self, conn: Conn, rows: Sequence[Row]) -> PostgresImportBatch:
        """The agent's message statistics are locked first, as every history writer does,
        then the document corpus row, so writers cannot deadlock."""
        agent = self._db.agent_id
        if any(isinstance(r, (MessageRow, SummaryRow)) for r in rows):
            conn.execute(LOCK_CORPUS, (agent, MESSAGES))
        if any(isinstance(r, (DocumentRow, RevisionRow)) for r in rows):
            conn.execute(LOCK_CORPUS, (agent, DOCUMENTS))
        return PostgresImportBatch(self._db, conn, self._compiler)


_IMPORTERS = Importers(PostgresImportPort, lambda: BATCH_SIZE)
import_lines = _IMPORTERS.import_lines
import_records = _IMPORTERS.import_records
import_stream = _IMPORTERS.import_stream


class PostgresImportBatch(SqlImportBatch):
    """One batch's writes in the caller's transaction (`ImportBatch`); the BM25 statistics
    (`corpus_stats`) take the added messages in the same transaction."""

    def __init__(self, db: PostgresDB, conn: Conn, compiler: QueryCompiler) -> None:
        super().__init__(conn, sql, db.agent_id, encode, list)
        self._agent: str = db.agent_id
        self._db, self._compiler = db, compiler
        self._docs = self._tokens = 0  # messages added, and their tokens

    def _added(self, cursor: Any) -> bool:
        return bool(cursor.rowcount)

    def _message_params(self, ref: str, seq: int, message: Message) -> dict[str, Any]:
        values = message_row(self._compiler, message, self._now)
        params = dict(zip(APPEND_COLUMNS, values, strict=True))
        params.update(agent=self._agent, ref=ref, seq=seq)
        return params

    def _message_added(self, params: dict[str, Any]) -> None:
        self._docs += 1
        self._tokens += int(params["doc_len"])

    def _messages_done(self) -> None:
        if self._docs:
            self._conn.execute(UPDATE_STATS, (self._docs, self._tokens, self._agent, MESSAGES))
        self._docs = self._tokens = 0

    def document(self, row: DocumentRow, counts: ImportCounts) -> None:
        import_document(self._db, self._conn, row, counts)

    def revision(self, row: RevisionRow, counts: ImportCounts) -> None:
        import_revision(self._db, self._conn, row, counts)

    def message_vector(self, row: MessageVectorRow, counts: ImportCounts) -> None:
        import_message_vector(self._conn, self._agent, row, counts)

    def blob(self, row: BlobRow, counts: ImportCounts) -> None:
        import_framework_row(self._conn, self._agent, row, self._now, counts)

    def stored_fact(self, fact_id: str) -> StoredFact | None:
        params = {"agent": self._agent, "id": encode(fact_id), "now": now_ms()}
        rows = decoded(self._conn.execute(facts_sql.SELECT_ONE, params))
        found = facts_from_rows(rows, ranked=False)
        return stored_fact_of(prepare_fact(found[0], keep_hits=True)) if found else None

    def write_facts(self, facts: Sequence[Fact]) -> None:
        """The fact store's own upsert (statistics and vectors kept exact)."""
        fact_rows = [prepare_fact(f, keep_hits=True) for f in facts]
        params = [self._db.facts._params(r) for r in fact_rows]
        self._db.facts._write_rows(self._conn, fact_rows, params, self._now)
        pairs = [(encode(f.id), _encoded(f.superseded_by)) for f in facts if not f.key]
        link_supersessions(self._conn, self._agent, pairs)

    def vector(self, row: VectorRow, counts: ImportCounts) -> None:
        _write_vector(self._conn, self._agent, row, counts)


def _encoded(fact_id: str | None) -> str | None:
    return None if fact_id is None else encode(fact_id)


def _write_vector(conn: Conn, agent: str, row: VectorRow, counts: ImportCounts) -> None:
    """Store one vector record after the facts of its batch; skipped when its fact is not
    there, when it is unusable, or when the same vector is stored already."""
    import numpy as np  # only imports that carry vectors load numpy

    from ..search.vectors import checked_rows, content_key, to_blob

    params = {"agent": agent, "id": encode(row.id), "now": now_ms()}
    found = conn.execute(sql.IMPORT_VECTOR_TARGET, params).fetchone()
    raw = np.frombuffer(row.data, dtype="<f4").reshape(1, row.dim).astype(np.float32)
    vector = checked_rows(raw, 1)[0]
    if found is None or vector is None:
        counts.vectors_skipped += 1
        return
    content, model, stored = found
    blob = to_blob(vector)
    if model == row.model and stored is not None and bytes(stored) == blob:
        counts.vectors_skipped += 1
        return
    conn.execute(
        vectors_sql.UPSERT_BY_ID,
        {**params, "model": row.model, "dim": row.dim,
         "hash": content_key(row.model, decode(content)), "vector": blob},
    )  # fmt: skip
    counts.vectors += 1
