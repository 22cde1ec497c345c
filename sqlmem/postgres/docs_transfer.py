"""Workspace documents in the PostgreSQL export and import: the SQLite export's records
(`sqlmem.sqlite.transfer.docs_transfer`) and its merge, on one agent's rows.

Export: every document by path, then every kept revision by (path, revision), in pages
by key, each page its own short read. (SQLite writes them in its row order, creation
order; the records are the same, and an import does not depend on their order.)

Import is the SQLite import's merge, idempotent:
- a document record replaces the stored document of its path when its revision is
  higher, or equal with a later `updated_at`; the replaced content is always kept as the
  revision it was (nothing is lost by importing a sibling's file): when the numbers are
  equal and the contents differ, the record's content becomes the next revision. Then
  revisions are pruned to `StoreConfig.doc_revisions`. An equal or older record writes
  nothing, so a second import adds nothing;
- a revision record is added when its document is stored, has no revision of that
  number, and the number is below the current one and among the last `doc_revisions`.
Search blocks are written by the document store's own indexing (`doc_index`: a new
document's blocks, or only those around a change), which keeps the BM25 statistics of
`corpus_stats` exact. The caller holds the agent's document corpus row (`LOCK_CORPUS`
with `docs_sql.DOCUMENTS`), as every document writer does, for the whole batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..rules.doc_blocks import split_blocks
from ..rules.doc_writes import imports_revision, merge_imported_document
from ..rules.export_format import DocumentRow, ImportCounts, RevisionRow
from ..rules.export_records import document_record, revision_record
from . import transfer_sql as sql
from .codec import decode, encode
from .doc_index import insert_blocks, write_blocks
from .docs_sql import PRUNE_REVISIONS
from .engine import Conn

if TYPE_CHECKING:
    from . import PostgresDB

__all__ = ["export_documents", "import_document", "import_revision"]

#: Rows per page: a document may hold up to 10 MiB.
_PAGE = 200


def export_documents(db: PostgresDB) -> Iterator[dict[str, Any]]:
    """Every document, then every kept revision, as export records."""
    after = ""
    while True:
        with db._engine.read() as conn:
            rows = conn.execute(sql.EXPORT_DOCUMENTS_PAGE, (db.agent_id, after, _PAGE)).fetchall()
        for path, content, *rest in rows:
            yield document_record(path, decode(content), *rest)
        if len(rows) < _PAGE:
            break
        after = rows[-1][0]
    key: tuple[str, int] = ("", 0)
    while True:
        with db._engine.read() as conn:
            revs = conn.execute(sql.EXPORT_REVISIONS_PAGE, (db.agent_id, *key, _PAGE)).fetchall()
        for path, revision, content, updated in revs:
            yield revision_record(path, revision, decode(content), updated)
        if len(revs) < _PAGE:
            return
        key = (revs[-1][0], revs[-1][1])


def import_document(db: PostgresDB, conn: Conn, row: DocumentRow, counts: ImportCounts) -> None:
    """Merge one document record (see the module's docstring) in the caller's transaction."""
    key = {"agent": db.agent_id, "path": row.path}
    values = {
        **key,
        "enabled": row.enabled,
        "order": row.sort_order,
        "revision": row.revision,
        "size": row.size,
        "created": row.created_ms,
        "updated": row.updated_ms,
        "content": encode(row.content),
    }
    compiler = db.docs.port.compiler
    stored = conn.execute(sql.STORED_DOCUMENT, key).fetchone()
    if stored is None:
        conn.execute(sql.IMPORT_DOCUMENT, values)
        insert_blocks(conn, compiler, key, split_blocks(row.content), 0)
        counts.documents += 1
        return
    revision, updated, old = stored
    old_content = decode(old)
    merge = merge_imported_document(
        revision,
        updated,
        old_content,
        row.revision,
        row.updated_ms,
        row.content,
        db.config.doc_revisions,
    )
    if not merge.replaces:
        counts.documents_skipped += 1
        return
    if merge.keep_current:
        conn.execute(sql.KEEP_CURRENT, key)
    conn.execute(sql.REPLACE_DOCUMENT, {**values, "revision": merge.revision})
    conn.execute(PRUNE_REVISIONS, {**key, "below": merge.prune_below})
    write_blocks(conn, compiler, key, old_content, row.content)
    counts.documents += 1


def import_revision(db: PostgresDB, conn: Conn, row: RevisionRow, counts: ImportCounts) -> None:
    """Add one kept revision when the merge's rule takes it, in the caller's transaction."""
    key = {"agent": db.agent_id, "path": row.path}
    stored = conn.execute(sql.STORED_REVISION, key).fetchone()
    current = 0 if stored is None else int(stored[0])  # no document: no revision fits
    if imports_revision(current, db.config.doc_revisions, row.revision):
        params = {**key, "revision": row.revision, "size": row.size,
                  "updated": row.updated_ms, "content": encode(row.content)}  # fmt: skip
        if conn.execute(sql.ADD_REVISION, params).rowcount:
            counts.revisions += 1
            return
    counts.revisions_skipped += 1
