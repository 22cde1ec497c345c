"""Import of an export (rules/export_format.py) into a SQLite memory database.

Import is a merge keyed by identity, so it is idempotent and safe to re-run:

- a message is identified by (session_id, seq): an existing one is left as it is, never
  renumbered or overwritten; the session's counter and archive boundary only move forward
  (max of what is there and what is imported). Seqs are taken as given, so a hand-made
  file must number each session 1, 2, 3 ... without gaps, as exports do (the history
  store counts active messages as last_seq - archived_seq). Seqs and archive boundaries
  go up to `MAX_IMPORTED_SEQ` (2**62), which leaves room for 2**62 appends;
- a summary replaces the target's when the target has none, or when the imported archive
  boundary is at least the target's (the summary belongs to the boundary it describes);
- a fact is identified by its id (a record without one gets the id `LLMExtractor` would
  give its text). Of the stored fact and the file's records of one id, the one with the
  latest `updated_at` wins; on a tie the later record (the file counting as coming after
  what the target holds, so a tie with the target only writes when the values differ
  and a second import writes nothing). An older export never rolls back a newer fact. A
  record without `updated_at` is older than any dated one: it only fills an id nothing
  else gives. The outcome is that of taking the records one by one, whatever the batch
  size (within a batch the winner is picked first, then compared with the stored fact).

Direct SQL is needed because the history store's public API assigns seqs, timestamps and
the archive boundary itself; restoring them exactly is this module's whole job. Every
statement is a constant with bound values (history_sql.py, facts_sql.py), run through the
engine's writer. Records are validated before anything is written; a bad one stops the
import with its line number. Batches of `BATCH_SIZE` records are committed one transaction
at a time (never holding the write lock for a whole large file): what came before a bad
line stays imported, and running the fixed file again only adds the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..records import Fact
from ..rules.checks import encode_metadata, encode_tool_calls
from ..rules.encoding import dt_to_ms, dumps_json, now_ms
from ..rules.export_format import (
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
    newer_record,
    read_export,
    read_records,
)
from ..rules.filters import prepare_fact
from ..rules.import_batches import write_in_batches
from ..search.query import segment
from .chains import link_supersessions
from .docs_transfer import import_document, import_revision
from .facts_sql import IMPORT_STORED_FACT
from .history_sql import IMPORT_MESSAGE, IMPORT_SESSION, RECOUNT_HOLES, SELECT_SUMMARY
from .kv_transfer import import_blob_row
from .message_vectors_transfer import import_message_vector
from .vectors_transfer import import_vector

if TYPE_CHECKING:
    import apsw

    from .db import MemoryDB

__all__ = ["BATCH_SIZE", "import_lines", "import_records", "import_stream"]

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
    counts = ImportCounts()
    undated: set[str] = set()  # fact ids this import stored from records without updated_at

    def write(rows: list[Row]) -> None:
        _write_batch(db, rows, counts, undated)

    write_in_batches(stream, write, progress, BATCH_SIZE)
    if db.facts.embedder is not None:  # facts the file brought without vectors (SPEC 17),
        db.facts.embed_pending()  # embedded after the import's transactions, not in them
    if db.history.embedder is not None:  # and messages
        db.history.embed_pending()
    return counts


def _write_batch(db: MemoryDB, rows: list[Row], counts: ImportCounts, undated: set[str]) -> None:
    """One transaction: sessions and messages by direct SQL, facts through the store.

    Facts: the batch's winner per id (`newer_record`), then written if it beats what is stored
    (`_beats_stored`), so the outcome is the same as taking the file's records one by one,
    whatever the batch size (issue 23 item 16: the older text used to win within a batch).
    """
    searchable = 1 if db.config.history_search else 0
    now = now_ms()
    winners: dict[str, Fact] = {}  # keeps the first position of an id (its pk order)
    vectors: list[VectorRow] = []  # stored after the batch's facts
    seen = 0
    sessions: set[int] = set()  # touched: their popped seqs (holes) are counted again
    with db.engine.write() as conn:
        for row in rows:
            if isinstance(row, MessageRow):
                sessions.add(_write_message(conn, row, searchable, now, counts))
            elif isinstance(row, SummaryRow):
                sessions.add(_write_summary(conn, row, now, counts))
            elif isinstance(row, DocumentRow):
                import_document(conn, row, db.config.doc_revisions, counts)
            elif isinstance(row, RevisionRow):
                import_revision(conn, row, db.config.doc_revisions, counts)
            elif isinstance(row, VectorRow):
                vectors.append(row)
            elif isinstance(row, MessageVectorRow):  # after its message: written in order
                import_message_vector(conn, row, counts)
            elif isinstance(row, BlobRow):
                import_blob_row(conn, row, now, counts)
            else:
                seen += 1
                best = winners.get(row.id)
                if best is None or newer_record(row, best):
                    winners[row.id] = row
        if sessions:
            conn.execute(RECOUNT_HOLES, (dumps_json(sorted(sessions)),))
        facts = [f for f in winners.values() if _beats_stored(conn, f, undated)]
        if facts:
            db.facts.restore_many(facts)  # nested: a savepoint of this transaction
            link_supersessions(conn, [(f.id, f.superseded_by) for f in facts if not f.key])
        for f in facts:
            if f.updated_at is None:
                undated.add(f.id)
            else:
                undated.discard(f.id)
        counts.facts += len(facts)
        counts.facts_skipped += seen - len(facts)
        for vector in vectors:
            import_vector(conn, vector, counts)


def _write_message(
    conn: apsw.Connection, row: MessageRow, searchable: int, now: int, counts: ImportCounts
) -> int:
    """Upsert the message's session, insert the message; returns the session's pk."""
    session: Any = conn.execute(
        IMPORT_SESSION,
        {
            "session_id": row.session_id,
            # Messages imported with history search off wait for the next open with it
            # on, like appended ones (see history.index_unsearchable_messages).
            "unindexed": 1 - searchable,
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
            searchable,
            segment(message.content),
        ),
    )
    if conn.changes():
        counts.messages += 1
    else:
        counts.messages_skipped += 1
    return int(session)


def _write_summary(conn: apsw.Connection, row: SummaryRow, now: int, counts: ImportCounts) -> int:
    """Upsert the session's summary and boundary; returns the session's pk."""
    before = conn.execute(SELECT_SUMMARY, (row.session_id,)).fetchall()
    stored: Any = conn.execute(
        IMPORT_SESSION,
        {
            "session_id": row.session_id,
            "unindexed": 0,
            "summary": row.summary,
            "has_summary": 1 if row.summary else 0,
            "last_seq": row.archived_seq,
            "archived_seq": row.archived_seq,
            "now": now,
        },
    ).fetchall()[0]
    pk, after = stored
    if row.summary and (not before or before[0][0] != after):
        counts.summaries += 1
    return int(pk)


def _beats_stored(conn: apsw.Connection, fact: Fact, undated: set[str]) -> bool:
    """Whether the record replaces the stored fact of its id, by `newer_record`'s rule, the
    stored fact counting as an earlier record.

    A stored fact that came from an undated record of this import (`undated`; such a
    fact is stored with the time it was written) loses to any later record. A stored
    fact from anywhere else is never replaced by an undated record; on equal updated_at
    it is replaced only when the values differ, so importing a file twice writes nothing.
    """
    stored: list[Any] = conn.execute(IMPORT_STORED_FACT, (fact.id,)).fetchall()
    if not stored or fact.id in undated:
        return True
    if fact.updated_at is None:
        return False
    updated, stored_updated = dt_to_ms(fact.updated_at), int(stored[0][-1])
    if updated != stored_updated:
        return updated > stored_updated
    row = prepare_fact(fact, keep_hits=True)
    mine = (
        *(row.content, row.source, row.category, row.tags, row.metadata, row.layer, row.kind),
        *(row.confidence, row.salience, row.refs, row.expires_ms, row.hits),
    )
    return (
        tuple(stored[0][:12]) != mine
        or (row.created_ms is not None and row.created_ms != stored[0][12])
        or row.key != stored[0][13]
        or (row.valid_from_ms is not None and row.valid_from_ms != stored[0][14])
    )
