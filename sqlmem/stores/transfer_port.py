"""What a backend executes for the export and import front (`sqlmem.stores.transfer`).

The front reads and validates the export, cuts it into batches, picks each batch's facts
by the merge rule (`rules.import_merge`) and counts; a port opens one transaction per
batch and writes each kind of record into it, the way its storage needs (restoring seqs,
timestamps and archive boundaries exactly, which the stores' own writers assign
themselves).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from ..protocols import Database
from ..records import Fact
from ..rules.export_format import (
    BlobRow,
    DocumentRow,
    ImportCounts,
    MessageRow,
    MessageVectorRow,
    RevisionRow,
    Row,
    SummaryRow,
    VectorRow,
)
from ..rules.import_merge import StoredFact

__all__ = ["ExportPort", "ImportBatch", "ImportPort"]


class ImportBatch(Protocol):
    """The writes of one batch, all in one transaction; each counts what it added or
    skipped in `counts`."""

    def message(self, row: MessageRow, counts: ImportCounts) -> None:
        """Merge the message's session (counters and boundary only move forward) and insert
        the message unless its (session, seq) is there."""
        ...

    def summary(self, row: SummaryRow, counts: ImportCounts) -> None: ...

    def document(self, row: DocumentRow, counts: ImportCounts) -> None: ...

    def revision(self, row: RevisionRow, counts: ImportCounts) -> None: ...

    def message_vector(self, row: MessageVectorRow, counts: ImportCounts) -> None: ...

    def blob(self, row: BlobRow, counts: ImportCounts) -> None: ...

    def sessions_done(self) -> None:
        """After the batch's messages and summaries: the touched sessions count their holes
        again (and the backend's statistics take the added messages)."""
        ...

    def stored_fact(self, fact_id: str) -> StoredFact | None: ...

    def write_facts(self, facts: Sequence[Fact]) -> None:
        """Store the winning facts as given (hits included) and link their supersessions."""
        ...

    def vector(self, row: VectorRow, counts: ImportCounts) -> None:
        """A fact's vector, after the batch's facts; skipped when its fact is not there,
        when it is unusable, or when the same vector is stored already."""
        ...


@runtime_checkable
class ImportPort(Protocol):
    """One backend's database as an import target."""

    def batch(self, rows: Sequence[Row]) -> AbstractContextManager[ImportBatch]:
        """One write transaction for `rows` (committed when the block ends without error)."""
        ...

    @property
    def database(self) -> Database:
        """The database written to (its stores embed what came without vectors)."""
        ...


@runtime_checkable
class ExportPort(Protocol):
    """One backend's database as an export source: reads in pages by key, each page its
    own short read, so writes made while an export runs may or may not be included."""

    def header(self) -> tuple[int, bool]:
        """(schema version, whether any fact has a key, a valid time or a link)."""
        ...

    def has_message_vectors(self) -> bool: ...

    def parts(self, message_vectors: bool) -> Sequence[Iterator[dict[str, Any]]]:
        """The record streams in the file's order (message vectors only when asked)."""
        ...
