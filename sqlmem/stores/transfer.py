"""The export and import front: an export (`rules.export_format`) written from, and merged
into, any backend.

Export (`export_from`): the header, then the port's record streams in one order, with
progress; the records themselves are built by the shared rules (`rules.export_records`,
`rules.export_vectors`...), so both backends write the same file.

Import is a merge keyed by identity, so it is idempotent and safe to re-run: a message is
identified by (session_id, seq) and never renumbered or overwritten; a session's counter
and archive boundary only move forward; a summary belongs to the boundary it describes; a
fact is identified by its id and the merge rule (`rules.import_merge`) decides which
record of it wins; documents keep every replaced content as a revision. The outcome is
that of taking the records one by one, whatever the batch size: within a batch the
winner of each fact id is picked first (`newer_record`), then compared with the stored
fact.

Records are validated a batch at a time before the batch is written
(`rules.import_batches`); each batch is one transaction of the backend's `ImportPort`,
so the write lock is never held for a whole large file: what came before a bad record
stays imported, and running the fixed file again only adds the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from itertools import chain
from typing import Any, Generic, TypeVar

from ..protocols import Database, has_vector_search
from ..records import Fact
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
    iso_ms,
    newer_record,
    read_export,
    read_records,
)
from ..rules.import_batches import write_in_batches
from ..rules.import_merge import beats_stored
from .transfer_port import ExportPort, ImportBatch, ImportPort

__all__ = ["BATCH_SIZE", "Importers", "export_from", "import_into"]

#: Records per transaction.
BATCH_SIZE = 1000


def import_into(
    port: ImportPort,
    stream: ExportStream,
    progress: Progress | None = None,
    batch_size: int = BATCH_SIZE,
) -> ImportCounts:
    """Write the stream's records through `port`, `batch_size` records per transaction;
    `progress(n)` every 10,000 records."""
    counts = ImportCounts()
    undated: set[str] = set()  # fact ids this import stored from records without updated_at

    def write(rows: list[Row]) -> None:
        with port.batch(rows) as batch:
            _write_batch(batch, rows, counts, undated)

    write_in_batches(stream, write, progress, batch_size)
    _embed_pending(port.database)
    return counts


D = TypeVar("D")


class Importers(Generic[D]):
    """A backend's `import_lines`, `import_records` and `import_stream`, over its import
    port: `port(db)` for a database, `batch_size()` records per transaction (read at each
    import, so a test can make batches small)."""

    def __init__(self, port: Callable[[D], ImportPort], batch_size: Callable[[], int]) -> None:
        self._port = port
        self._batch_size = batch_size

    def import_lines(
        self, db: D, lines: Iterable[bytes | str], progress: Progress | None = None
    ) -> ImportCounts:
        """Import an export file given as its lines (errors name the line)."""
        return self.import_stream(db, read_export(lines), progress)

    def import_records(
        self, db: D, records: Iterable[Mapping[str, Any]], progress: Progress | None = None
    ) -> ImportCounts:
        """Import records as an `export_records` (of either backend) yields them, header
        first. Errors name the 1-based position of the bad record."""
        return self.import_stream(db, read_records(records), progress)

    def import_stream(
        self, db: D, stream: ExportStream, progress: Progress | None = None
    ) -> ImportCounts:
        """Write the stream's records into `db`, a batch of records per transaction."""
        return import_into(self._port(db), stream, progress, self._batch_size())


def _embed_pending(db: Database) -> None:
    """Vectors for the facts and messages the file brought without them, made after the
    import's transactions, not in them (no model runs while the write lock is held)."""
    facts, history = db.facts, db.history
    if has_vector_search(facts):
        db.facts.embed_pending()
    if has_vector_search(history):
        db.history.embed_pending()


def _write_batch(
    batch: ImportBatch, rows: Sequence[Row], counts: ImportCounts, undated: set[str]
) -> None:
    """Every record in stream order but facts and their vectors; then the facts that win,
    then the vectors (a vector needs its fact)."""
    winners: dict[str, Fact] = {}  # keeps the first position of an id (its pk order)
    vectors: list[VectorRow] = []
    seen = 0
    for row in rows:
        if isinstance(row, MessageRow):
            batch.message(row, counts)
        elif isinstance(row, SummaryRow):
            batch.summary(row, counts)
        elif isinstance(row, DocumentRow):
            batch.document(row, counts)
        elif isinstance(row, RevisionRow):
            batch.revision(row, counts)
        elif isinstance(row, VectorRow):
            vectors.append(row)
        elif isinstance(row, MessageVectorRow):  # after its message: written in order
            batch.message_vector(row, counts)
        elif isinstance(row, BlobRow):
            batch.blob(row, counts)
        else:
            seen += 1
            best = winners.get(row.id)
            if best is None or newer_record(row, best):
                winners[row.id] = row
    batch.sessions_done()
    facts = [f for f in winners.values() if beats_stored(f, batch.stored_fact(f.id), undated)]
    if facts:
        batch.write_facts(facts)
    for f in facts:
        if f.updated_at is None:
            undated.add(f.id)
        else:
            undated.discard(f.id)
    counts.facts += len(facts)
    counts.facts_skipped += seen - len(facts)
    for vector in vectors:
        batch.vector(vector, counts)


def export_from(port: ExportPort, progress: Progress | None = None) -> Iterator[dict[str, Any]]:
    """The header, then every record the port's parts give, in their order (messages by
    session then seq, summaries, message vectors, live facts oldest first, their vectors,
    documents and their kept revisions, the frameworks' records); `progress(n)` every
    10,000 records. The format version is the lowest that can hold what is exported, so
    older readers read every file they can."""
    schema_version, changing = port.header()
    message_vectors = port.has_message_vectors()
    yield {
        "format": EXPORT_FORMAT,
        "format_version": (
            READABLE_FORMAT_VERSION if changing or message_vectors else FORMAT_VERSION
        ),
        "schema_version": schema_version,
        "exported_at": iso_ms(datetime.now(timezone.utc)),
    }
    for count, record in enumerate(chain.from_iterable(port.parts(message_vectors)), start=1):
        yield record
        if progress is not None and count % 10_000 == 0:
            progress(count)
