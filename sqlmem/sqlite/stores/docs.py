"""The SQLite document store: workspace Markdown files inside memory.db.

Storage model (migrations/NNNN_documents.sql): `documents` holds each path's current
content and flags; `document_revisions` the previous contents, pruned to
`StoreConfig.doc_revisions` in the transaction that adds one; `document_blocks` the
content cut into blocks (runs of non-blank lines) with their line numbers, indexed by
`document_blocks_fts` through triggers.

`SQLiteDocumentStore` is the shared front (`sqlmem.stores.documents`) over
`SQLiteDocumentPort`, which only executes: the front has checked the arguments and says
what each write means (`sqlmem.rules.doc_writes`).

Where the blocks are cut: in Python. A small document (`doc_index.SMALL`, 64 KiB) is
read and changed in one short transaction, its blocks cut under the write lock (well
under a millisecond); a larger one is read and its blocks cut before the lock is taken
(`doc_index.prepare`), then written when the document is still as it was read, else
cut again there. The split (line numbers, blank lines) and the CJK segmentation of the
indexed text are rules the in-memory twin applies too (`rules.doc_blocks`,
`rules.doc_index_work`, `search.query.segment`); doing it in SQL would write them twice,
and a recursive CTE over lines is neither cheap nor readable. Only the blocks around a
change are deleted and inserted (the blocks after it get new line numbers, which the FTS
triggers ignore; see `doc_index`), so editing one passage of a large document re-indexes
that passage; a change that would re-index more than one write may
(`rules.doc_index_work`) is refused before anything is written, which bounds the time
any document write holds the write lock. One transaction holds the content, the kept
revision, the pruning and the blocks: a crash leaves the previous revision whole.

Writes are one short `BEGIN IMMEDIATE` transaction through the engine's writer (nested
ones, as in `import_dir` or an `atomic()` block, are savepoints); reads use a pooled
reader connection.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, NamedTuple

import apsw

from ...rules.doc_writes import NewContent, Put, RevisionText, Stored
from ...rules.encoding import now_ms
from ...search.query import MAX_QUERY_TERMS, QueryCompiler, compiler_for, phrases
from ...stores.documents import DocumentStoreFront
from ...stores.documents_port import DocumentChange, DocumentQuery
from ...stores.sql_documents import SqlDocumentPort, changed
from ...stores.sql_port import plain_text
from ..core.engine import Engine
from . import docs_sql as sql
from .doc_index import SMALL, Prepared, prepare_from, row_for_write, small_row, write_blocks
from .fts_any import capped_terms

__all__ = ["SQLiteDocumentPort", "SQLiteDocumentStore"]


class _Read(NamedTuple):
    """A change worked out from a read before the write lock: the SELECT_FOR_WRITE row
    it read (None: no document), the new content, and its blocks, cut."""

    row: Any
    new: NewContent
    prepared: Prepared | None


class SQLiteDocumentPort(SqlDocumentPort):
    """`DocumentPort` over one database file. Thread-safe (the engine serialises writes)."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine, sql, None, plain_text)
        self._engine: Engine = engine

    @property
    def compiler(self) -> QueryCompiler:
        return compiler_for(self._engine.tokenizer)

    def describe(self) -> str:
        return f"<SQLiteDocumentStore {str(self._engine.path)!r}>"

    # -- writes -------------------------------------------------------------------------

    def change(self, change: DocumentChange) -> tuple[NewContent, Put]:
        """A small document changed to a small content: in one short transaction. Else
        the change is worked out and its blocks cut from a read outside the write lock."""
        if change.at_least <= SMALL:
            with self._engine.write() as conn:
                row = small_row(conn, change.path)
                if row is None or row[7] is not None:  # (None there: larger than SMALL)
                    stored = _stored(row)
                    new = change.new_content(stored, self._source(conn, change))
                    if new.size <= SMALL:  # both small: cut here, quickly
                        return self._execute(conn, change, row, stored, new, now_ms())
        read = self._read(change)
        with self._engine.write() as conn:
            return self._apply(conn, change, read, now_ms())

    def change_all(
        self, changes: Sequence[DocumentChange]
    ) -> builtins.list[tuple[NewContent, Put]]:
        reads = [self._read(change) for change in changes]  # cut before the write lock
        now = now_ms()
        with self._engine.write() as conn:  # one transaction: all or none
            return [
                self._apply(conn, change, read, now)
                for change, read in zip(changes, reads, strict=True)
            ]

    def _read(self, change: DocumentChange) -> _Read:
        """The change worked out from the document as it is now, read outside the write
        lock (inside an `atomic()` block, on its connection: its own writes), its blocks
        cut; a bounded change that would index more than one write may is refused here,
        before anything is written."""
        with self._engine.read() as conn:
            row = row_for_write(conn, change.path)
            source = self._source(conn, change)
        new = change.new_content(_stored(row), source)
        if row is not None and new.text == row[7]:
            return _Read(row, new, None)
        return _Read(row, new, prepare_from(change.path, row, new.text, bounded=change.bounded))

    def _apply(
        self, conn: apsw.Connection, change: DocumentChange, read: _Read, now: int
    ) -> tuple[NewContent, Put]:
        """`read` under the write lock: kept when the document is still as read, else
        worked out again on the row read now."""
        row = row_for_write(conn, change.path)
        stored = _stored(row)
        if _same(row, read.row):
            return self._execute(conn, change, row, stored, read.new, now, read.prepared)
        new = change.new_content(stored, self._source(conn, change))
        return self._execute(conn, change, row, stored, new, now)

    def _execute(
        self,
        conn: apsw.Connection,
        change: DocumentChange,
        row: Any,
        stored: Stored | None,
        new: NewContent,
        now: int,
        prepared: Prepared | None = None,
    ) -> tuple[NewContent, Put]:
        """Store what `change` decides over `row` (its SELECT_FOR_WRITE row, read in this
        transaction). `prepared`: the blocks of exactly this change, or None (cut here)."""
        put = change.put(stored, new, now)
        path = change.path
        if put.created:
            values = (path, int(put.enabled), put.sort_order, new.size, now, now, new.text)
            pk = conn.execute(sql.INSERT, values).get
            write_blocks(conn, path, pk, None, new.text, prepared, bounded=change.bounded)
        elif put.overwritten:
            pk = row[0]
            if put.keep_previous:
                conn.execute(sql.KEEP_REVISION, (pk,))
            conn.execute(sql.PRUNE_REVISIONS, (pk, put.prune_below))
            write_blocks(conn, path, pk, row[7], new.text, prepared, bounded=change.bounded)
            content = (new.text, new.size, put.revision, now, int(put.enabled), put.sort_order)
            conn.execute(sql.UPDATE_CONTENT, (*content, pk))
        elif put.flags_changed:
            conn.execute(sql.UPDATE_FLAGS, (int(put.enabled), put.sort_order, row[0]))
        return new, put

    def _source(self, conn: apsw.Connection, change: DocumentChange) -> RevisionText | None:
        number = change.source_revision
        return None if number is None else _revision_text(conn, change.path, number)

    def delete(self, path: str) -> bool:
        return changed(self._engine, sql.DELETE, {"path": path})  # revisions, blocks cascade

    # -- reads --------------------------------------------------------------------------

    def revision_infos(self, path: str) -> list[tuple[Any, ...]] | None:
        with self._engine.read() as conn:
            row = conn.execute(sql.PK_AND_REVISION, (path, None)).fetchall()
            if not row:
                return None
            rows: list[Any] = conn.execute(sql.REVISIONS, (row[0][0],)).fetchall()
            return rows

    def revision_text(self, path: str, revision: int) -> RevisionText | None:
        with self._engine.read() as conn:
            return _revision_text(conn, path, revision)

    def search(self, query: DocumentQuery) -> list[tuple[Any, ...]]:
        compiler = self.compiler
        terms = query.terms
        match = compiler.match(query.query, "any") if len(terms) <= MAX_QUERY_TERMS else None
        with self._engine.read() as conn:
            if match is None:  # a long query: its rarest words, counted in this snapshot
                match = phrases(capped_terms(conn, sql.ANY, terms, "any"), " OR ")
                if match is None:
                    return []
            params = {"query": match, "limit": query.limit, "prefix": query.prefix}
            rows: list[Any] = conn.execute(
                sql.SEARCH_PREFIX if query.prefix else sql.SEARCH, params
            ).fetchall()
        return [(p, start, end, text, -score) for p, start, end, text, score in rows]


class SQLiteDocumentStore(DocumentStoreFront):
    """`DocumentStore` over one database file: the shared front over `SQLiteDocumentPort`."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(SQLiteDocumentPort(engine))


def _stored(row: Any) -> Stored | None:
    if row is None:
        return None
    _, enabled, order, revision, created, updated, size, content = row
    return Stored(bool(enabled), order, revision, created, updated, size, content)


def _same(row: Any, read: Any) -> bool:
    """The document is as it was read: the same revision of the same content (a document
    deleted and written again may be at the same revision number)."""
    if row is None or read is None:
        return row is read
    return bool(row[3] == read[3] and row[7] == read[7])


def _revision_text(conn: apsw.Connection, path: str, revision: int) -> RevisionText | None:
    """The current revision and the content of `revision` (the current one, or a kept
    previous one); None: no document."""
    rows: list[Any] = conn.execute(sql.PK_AND_REVISION, (path, revision)).fetchall()
    if not rows:
        return None
    pk, current, content = rows[0]
    if revision == current:
        return RevisionText(current, str(content))
    found: list[Any] = conn.execute(sql.READ_REVISION, (pk, revision)).fetchall()
    return RevisionText(current, str(found[0][0]) if found else None)
