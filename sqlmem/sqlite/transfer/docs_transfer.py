"""Workspace documents in the JSON Lines export and import (rules/export_format.py).

Export: every document, then every kept revision, in pages by key (each page its own
short read), as `export.py` does for messages and facts.

Import is a merge, idempotent like the rest of the import:
- a document record replaces the stored document of its path when its revision is
  higher, or equal with a later `updated_at`; a replaced content is always kept as the
  revision it was (nothing is lost by importing a sibling's file). When the numbers are
  equal and the contents differ (two copies edited apart), the record's content becomes
  the next revision, so the stored one keeps its number. An equal record writes nothing,
  and neither does a second import;
- a revision record is added when its document has no revision of that number, the
  number is below the current revision, and it is among the last
  `StoreConfig.doc_revisions` (the same pruning rule as writes).
Blocks and their full-text entries are written by the store's own `doc_index.write_blocks`,
without the bound on one write's indexing: an import is a bulk operation in batches.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ...rules.doc_writes import imports_revision, merge_imported_document
from ...rules.export_format import DocumentRow, ImportCounts, RevisionRow
from ...rules.export_records import document_record, revision_record
from ..stores import docs_sql as sql
from ..stores.doc_index import write_blocks

if TYPE_CHECKING:
    import apsw

    from ..db import MemoryDB

__all__ = ["export_documents", "import_document", "import_revision"]

_PAGE = 1000

_STORED = "SELECT pk, revision, updated_at, content FROM documents WHERE path = ?"
_INSERT = (
    "INSERT INTO documents (path, enabled, sort_order, revision, size, created_at,"
    " updated_at, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING pk"
)
_REPLACE = (
    "UPDATE documents SET enabled = ?, sort_order = ?, revision = ?, size = ?,"
    " created_at = ?, updated_at = ?, content = ? WHERE pk = ?"
)
_KEEP_CURRENT = (
    "INSERT INTO document_revisions (document, revision, size, updated_at, content)"
    " SELECT pk, revision, size, updated_at, content FROM documents WHERE pk = ?"
    " ON CONFLICT (document, revision) DO NOTHING"
)
_ADD_REVISION = (
    "INSERT INTO document_revisions (document, revision, size, updated_at, content)"
    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (document, revision) DO NOTHING"
)


def export_documents(db: MemoryDB) -> Iterator[dict[str, Any]]:
    """Every document, then every kept revision, as export records."""
    after = 0
    while True:
        with db.engine.read() as conn:
            rows: list[Any] = conn.execute(sql.EXPORT_DOCUMENTS_PAGE, (after, _PAGE)).fetchall()
        for pk, *document in rows:
            yield document_record(*document)
            after = pk
        if len(rows) < _PAGE:
            break
    after = 0
    while True:
        with db.engine.read() as conn:
            revs: list[Any] = conn.execute(sql.EXPORT_REVISIONS_PAGE, (after, _PAGE)).fetchall()
        for pk, *revision in revs:
            yield revision_record(*revision)
            after = pk
        if len(revs) < _PAGE:
            return


def import_document(
    conn: apsw.Connection, row: DocumentRow, keep: int, counts: ImportCounts
) -> None:
    stored: list[Any] = conn.execute(_STORED, (row.path,)).fetchall()
    values = (
        int(row.enabled),
        row.sort_order,
        row.revision,
        row.size,
        row.created_ms,
        row.updated_ms,
        row.content,
    )
    if not stored:
        pk = conn.execute(_INSERT, (row.path, *values)).get
        write_blocks(conn, row.path, pk, None, row.content, bounded=False)
        counts.documents += 1
        return
    pk, revision, updated, old = stored[0]
    merge = merge_imported_document(
        revision, updated, old, row.revision, row.updated_ms, row.content, keep
    )
    if not merge.replaces:
        counts.documents_skipped += 1
        return
    if merge.keep_current:
        conn.execute(_KEEP_CURRENT, (pk,))
    conn.execute(_REPLACE, (*values[:2], merge.revision, *values[3:], pk))
    conn.execute(sql.PRUNE_REVISIONS, (pk, merge.prune_below))
    write_blocks(conn, row.path, pk, old, row.content, bounded=False)
    counts.documents += 1


def import_revision(
    conn: apsw.Connection, row: RevisionRow, keep: int, counts: ImportCounts
) -> None:
    stored: list[Any] = conn.execute(_STORED, (row.path,)).fetchall()
    if stored:
        pk, revision = stored[0][:2]
        if imports_revision(revision, keep, row.revision):
            conn.execute(_ADD_REVISION, (pk, row.revision, row.size, row.updated_ms, row.content))
            if conn.changes():
                counts.revisions += 1
                return
    counts.revisions_skipped += 1
