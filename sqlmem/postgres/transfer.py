"""Export and import of one PostgreSQL agent, in the SQLite export's format
(`sqlmem.rules.export_format`), so an agent moves between backends:

    from sqlmem.postgres.transfer import export_records, import_records
    from sqlmem.sqlite import export as sqlite_export
    import_records(pg_db, sqlite_export.export_records(sqlite_db))   # SQLite -> PostgreSQL
    sqlite_import.import_records(sqlite_db, export_records(pg_db))   # and back

The export is the same records in the same order as the SQLite file's (messages by session
then seq, summaries, message vectors, live facts oldest first, their vectors, then the
workspace documents and their kept revisions: `docs_transfer`, which orders them by path);
import is the same merge keyed by identity as `sqlmem.sqlite.importer` (idempotent:
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
import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..records import Fact
from ..rules.encoding import dt_to_ms, now_ms
from ..rules.export_format import (
    EXPORT_FORMAT,
    FORMAT_VERSION,
    READABLE_FORMAT_VERSION,
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
    chain_fields,
    iso_from_ms,
    iso_ms,
    newer_record,
    read_export,
    read_records,
)
from ..rules.filters import prepare_fact
from ..rules.import_batches import write_in_batches
from ..rules.rows import facts_from_rows
from ..search.query import compiler_for
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
from .kv_transfer import export_framework_records, import_framework_row
from .message_vectors_transfer import (
    export_message_vectors,
    has_message_vectors,
    import_message_vector,
)

if TYPE_CHECKING:
    from . import PostgresDB

__all__ = ["BATCH_SIZE", "export_records", "import_lines", "import_records", "import_stream"]

BATCH_SIZE = 1000
_PAGE = 1000
_COMPARED = ("content", "source", "category", "tags", "metadata", "layer", "kind",
             "confidence", "salience", "refs", "expires_ms", "hits", "key",
             "valid_from_ms")  # fmt: skip


# -- export ----------------------------------------------------------------------------------


def export_records(db: PostgresDB, progress: Progress | None = None) -> Iterator[dict[str, Any]]:
    """The header, then every message, session summary, live fact, fact vector, document,
    kept revision, live kv row, checkpoint and pending write of the agent, as dicts; pages
    by key, each its own short read. `progress(n)` is called every 10,000 records."""
    with db._engine.read() as conn:
        row = conn.execute("SELECT max(version) FROM sqlmem_schema_version").fetchone()
        changing = conn.execute(sql.ANY_CHANGING, (db.agent_id, db.agent_id)).fetchone()
    message_vectors = has_message_vectors(db)
    newer = changing is not None or message_vectors
    yield {
        "format": EXPORT_FORMAT,
        "format_version": READABLE_FORMAT_VERSION if newer else FORMAT_VERSION,
        "schema_version": int(row[0]) if row and row[0] is not None else 0,
        "exported_at": iso_ms(datetime.now(timezone.utc)),
    }
    parts = (
        _messages(db), _summaries(db),
        export_message_vectors(db) if message_vectors else iter(()),
        _facts(db), _vectors(db), export_documents(db), export_framework_records(db),
    )  # fmt: skip
    count = 0
    for part in parts:
        for record in part:
            yield record
            count += 1
            if progress is not None and count % 10_000 == 0:
                progress(count)


def _messages(db: PostgresDB) -> Iterator[dict[str, Any]]:
    after: tuple[str, int] = ("", 0)
    while True:
        with db._engine.read() as conn:
            rows = conn.execute(sql.EXPORT_MESSAGES_PAGE, (db.agent_id, *after, _PAGE)).fetchall()
        for r in rows:
            yield {
                "type": "message",
                "session_id": decode(r[0]),
                "seq": r[1],
                "archived": bool(r[2]),
                "role": r[3],
                "content": decode(r[4]),
                "name": decode(r[5]),
                "tool_call_id": decode(r[6]),
                "tool_calls": json.loads(r[7]),
                "is_error": bool(r[8]),
                "metadata": json.loads(r[9]),
                "created_at": iso_from_ms(r[10]),
            }
        if len(rows) < _PAGE:
            return
        after = (rows[-1][0], rows[-1][1])


def _summaries(db: PostgresDB) -> Iterator[dict[str, Any]]:
    after = ""
    while True:
        with db._engine.read() as conn:
            rows = conn.execute(sql.EXPORT_SESSIONS_PAGE, (db.agent_id, after, _PAGE)).fetchall()
        for session_id, summary, archived_seq in rows:
            yield {
                "type": "summary",
                "session_id": decode(session_id),
                "summary": decode(summary),
                "archived_seq": archived_seq,
            }
        if len(rows) < _PAGE:
            return
        after = rows[-1][0]


def _facts(db: PostgresDB) -> Iterator[dict[str, Any]]:
    after = 0
    while True:
        with db._engine.read() as conn:
            params = {"agent": db.agent_id, "after": after, "limit": _PAGE, "now": now_ms()}
            rows = conn.execute(sql.EXPORT_FACTS_PAGE, params).fetchall()
        for fact in facts_from_rows(decoded(r[1:] for r in rows), ranked=False):
            yield _fact_record(fact)
        if len(rows) < _PAGE:
            return
        after = rows[-1][0]


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
    after = 0
    while True:
        with db._engine.read() as conn:
            params = {"agent": db.agent_id, "after": after, "limit": _PAGE, "now": now_ms()}
            rows = conn.execute(sql.EXPORT_VECTORS_PAGE, params).fetchall()
        for _, fact_id, model, dim, vector in rows:
            data = base64.b64encode(bytes(vector)).decode("ascii")
            yield {"type": "vector", "id": decode(fact_id), "model": model, "dim": dim,
                   "data": data}  # fmt: skip
        if len(rows) < _PAGE:
            return
        after = rows[-1][0]


# -- import ----------------------------------------------------------------------------------


def import_lines(
    db: PostgresDB, lines: Iterable[bytes | str], progress: Progress | None = None
) -> ImportCounts:
    """Import an export file given as its lines (errors name the line)."""
    return import_stream(db, read_export(lines), progress)


def import_records(
    db: PostgresDB, records: Iterable[Mapping[str, Any]], progress: Progress | None = None
) -> ImportCounts:
    """Import records as an `export_records` (of either backend) yields them, header first."""
    return import_stream(db, read_records(records), progress)


def import_stream(
    db: PostgresDB, stream: ExportStream, progress: Progress | None = None
) -> ImportCounts:
    """Write the stream's records into `db`, `BATCH_SIZE` records per transaction."""
    counts = ImportCounts()
    undated: set[str] = set()  # fact ids this import stored from records without updated_at

    def write(rows: list[Row]) -> None:
        _write_batch(db, rows, counts, undated)

    write_in_batches(stream, write, progress, BATCH_SIZE)
    if db.facts.embedder is not None:  # facts the file brought without vectors
        db.facts.embed_pending()
    if db.history.embedder is not None:  # and messages
        db.history.embed_pending()
    return counts


def _write_batch(db: PostgresDB, rows: list[Row], counts: ImportCounts, undated: set[str]) -> None:
    """One transaction: sessions and messages (the agent's message statistics locked first,
    as every history writer does), documents and revisions (the document corpus row
    locked next), then the facts that win (`newer_record`, then `_beats_stored`), written
    by the fact store's own upsert, then vectors; kv and checkpoint records in stream order."""
    now, agent = now_ms(), db.agent_id
    winners: dict[str, Fact] = {}
    vectors: list[VectorRow] = []
    sessions: set[str] = set()
    seen = docs = tokens = 0
    with db._engine.write() as conn:
        if any(isinstance(r, (MessageRow, SummaryRow)) for r in rows):
            conn.execute(LOCK_CORPUS, (agent, MESSAGES))
        if any(isinstance(r, (DocumentRow, RevisionRow)) for r in rows):
            conn.execute(LOCK_CORPUS, (agent, DOCUMENTS))
        for row in rows:
            if isinstance(row, MessageRow):
                added = _write_message(db, conn, row, now, counts)
                docs, tokens = docs + (added is not None), tokens + (added or 0)
                sessions.add(encode(row.session_id))
            elif isinstance(row, SummaryRow):
                _write_summary(conn, agent, row, now, counts)
                sessions.add(encode(row.session_id))
            elif isinstance(row, DocumentRow):
                import_document(db, conn, row, counts)
            elif isinstance(row, RevisionRow):
                import_revision(db, conn, row, counts)
            elif isinstance(row, VectorRow):
                vectors.append(row)
            elif isinstance(row, MessageVectorRow):  # after its message: written in order
                import_message_vector(conn, agent, row, counts)
            elif isinstance(row, BlobRow):
                import_framework_row(conn, agent, row, now, counts)
            else:
                seen += 1
                best = winners.get(row.id)
                if best is None or newer_record(row, best):
                    winners[row.id] = row
        if docs:
            conn.execute(UPDATE_STATS, (docs, tokens, agent, MESSAGES))
        if sessions:
            conn.execute(sql.RECOUNT_HOLES, (agent, sorted(sessions)))
        facts = [f for f in winners.values() if _beats_stored(conn, agent, f, undated)]
        if facts:
            fact_rows = [prepare_fact(f, keep_hits=True) for f in facts]
            params = [db.facts._params(r) for r in fact_rows]
            db.facts._write_rows(conn, fact_rows, params, now)
            pairs = [(encode(f.id), _encoded(f.superseded_by)) for f in facts if not f.key]
            link_supersessions(conn, agent, pairs)
        for f in facts:
            (undated.add if f.updated_at is None else undated.discard)(f.id)
        counts.facts += len(facts)
        counts.facts_skipped += seen - len(facts)
        for vector in vectors:
            _write_vector(conn, agent, vector, counts)


def _encoded(fact_id: str | None) -> str | None:
    return None if fact_id is None else encode(fact_id)


def _write_message(
    db: PostgresDB, conn: Conn, row: MessageRow, now: int, counts: ImportCounts
) -> int | None:
    """Merge the session, insert the message; its token count when it was added."""
    session = encode(row.session_id)
    conn.execute(
        sql.IMPORT_SESSION,
        {"agent": db.agent_id, "session": session, "last": row.seq,
         "archived": row.seq if row.archived else 0, "summary": "", "has_summary": False,
         "now": now},
    )  # fmt: skip
    values = message_row(compiler_for(db.config.tokenizer), row.message, now)
    cur = conn.execute(sql.IMPORT_MESSAGE, (db.agent_id, session, row.seq, *values))
    if cur.rowcount:
        counts.messages += 1
        return int(values[8])
    counts.messages_skipped += 1
    return None


def _write_summary(conn: Conn, agent: str, row: SummaryRow, now: int, counts: ImportCounts) -> None:
    session, summary = encode(row.session_id), encode(row.summary)
    before = conn.execute(sql.SELECT_SUMMARY, (agent, session)).fetchone()
    conn.execute(
        sql.IMPORT_SESSION,
        {"agent": agent, "session": session, "last": row.archived_seq,
         "archived": row.archived_seq, "summary": summary, "has_summary": bool(row.summary),
         "now": now},
    )  # fmt: skip
    after = conn.execute(sql.SELECT_SUMMARY, (agent, session)).fetchone()
    if row.summary and (before is None or before != after):
        counts.summaries += 1


def _beats_stored(conn: Conn, agent: str, fact: Fact, undated: set[str]) -> bool:
    """The SQLite import's rule (sqlite/importer.py `_beats_stored`): the stored fact counts
    as an earlier record; on equal updated_at it is replaced only when the values differ."""
    params = {"agent": agent, "id": encode(fact.id), "now": now_ms()}
    found = facts_from_rows(decoded(conn.execute(facts_sql.SELECT_ONE, params)), ranked=False)
    if not found or fact.id in undated:
        return True
    if fact.updated_at is None:
        return False
    mine, stored = prepare_fact(fact, keep_hits=True), prepare_fact(found[0], keep_hits=True)
    assert mine.updated_ms is not None and stored.updated_ms is not None
    if mine.updated_ms != stored.updated_ms:
        return mine.updated_ms > stored.updated_ms
    return any(getattr(mine, k) != getattr(stored, k) for k in _COMPARED) or (
        mine.created_ms is not None and mine.created_ms != stored.created_ms
    )


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
