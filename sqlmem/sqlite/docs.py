"""The SQLite document store: workspace Markdown files inside memory.db.

Storage model (migrations/NNNN_documents.sql): `documents` holds each path's current
content and flags; `document_revisions` the previous contents, pruned to
`StoreConfig.doc_revisions` in the transaction that adds one; `document_blocks` the
content cut into blocks (runs of non-blank lines) with their line numbers, indexed by
`document_blocks_fts` through triggers.

Where the blocks are cut: in Python. A small document (`doc_index.SMALL`, 64 KiB) is
read and changed in one short transaction, its blocks cut under the write lock (well
under a millisecond); a larger one is read and its blocks cut before the lock is taken
(`doc_index.prepare`), then written when the document is still at that revision, else
cut again there. The split (line numbers, blank
lines) and the CJK segmentation of the indexed text are rules the in-memory twin applies
too (`rules.doc_blocks`, `rules.doc_index_work`, `search.query.segment`); doing it in SQL
would write them twice, and a recursive CTE over lines is neither cheap nor readable.
Only the blocks around a change are deleted and inserted (the blocks after it get new
line numbers, which the FTS triggers ignore; see `doc_index`), so editing one passage of
a large document re-indexes that passage; a change that would re-index more than one
write may (`rules.doc_index_work`) is refused before anything is written, which bounds
the time any document write holds the write lock. One transaction holds the content,
the kept revision, the pruning and the blocks: a crash leaves the previous revision whole.

Writes are one short `BEGIN IMMEDIATE` transaction through the engine's writer (nested
ones, as in `import_dir` or an `atomic()` block, are savepoints); reads use a pooled
reader connection.
"""

from __future__ import annotations

import builtins
import os
from datetime import date
from typing import Any, NamedTuple

import apsw

from ..doc_records import (
    Document,
    DocumentHit,
    DocumentImport,
    DocumentInfo,
    DocumentWrite,
    RevisionInfo,
)
from ..errors import DocumentNotFoundError
from ..rules.doc_folders import read_folder, write_folder
from ..rules.doc_render import daily_day, memory_context, recent_window, render_files
from ..rules.documents import (
    appended,
    build_document,
    build_hit,
    build_info,
    build_revision,
    build_write,
    check_bool,
    check_content,
    check_day,
    check_doc_path,
    check_expected_revision,
    check_prefix,
    check_revision,
    check_sort_order,
    daily_heading,
    daily_path,
    edited,
    new_flags,
    prune_below,
    require_revision,
)
from ..rules.encoding import now_ms
from ..rules.filters import check_limit, check_query
from ..search.query import MAX_QUERY_TERMS, compiler_for, phrases
from . import docs_sql as sql
from .doc_index import SMALL, Prepared, prepare_from, row_for_write, small_row, write_blocks
from .engine import Engine
from .fts_any import capped_terms

__all__ = ["SQLiteDocumentStore"]


class _Put(NamedTuple):
    """What `_put` did, and the document's state afterwards."""

    created: bool
    overwritten: bool
    enabled: bool
    sort_order: int
    revision: int
    created_ms: int
    updated_ms: int


class SQLiteDocumentStore:
    """`DocumentStore` over one database file. Thread-safe (the engine serialises writes)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def __repr__(self) -> str:
        return f"<SQLiteDocumentStore {str(self._engine.path)!r}>"

    # -- writes -------------------------------------------------------------------------

    def write(
        self,
        path: str,
        content: str,
        *,
        enabled: bool | None = None,
        sort_order: int | None = None,
        expected_revision: int | None = None,
    ) -> DocumentWrite:
        """A small change is made in one short transaction; a large one's blocks are cut
        from a read outside the write lock (`doc_index.prepare`)."""
        check_doc_path(path)
        expected = check_expected_revision(expected_revision)
        size = check_content(content)
        if enabled is not None:
            check_bool(enabled, "enabled")
        if sort_order is not None:
            sort_order = check_sort_order(sort_order)
        if size <= SMALL:
            with self._engine.write() as conn:
                row = small_row(conn, path)
                require_revision(path, expected, None if row is None else row[3])
                if row is None or row[7] is not None:  # both small: cut here, quickly
                    done = self._put(
                        conn, path, content, size, enabled, sort_order, now_ms(), row, None, True
                    )
                    return build_write(path, done.created, done.overwritten, size, done.revision)
        seen = self._seen(path)
        require_revision(path, expected, seen[3] if seen else None)
        prepared = prepare_from(path, seen, content, bounded=True)
        with self._engine.write() as conn:
            row = row_for_write(conn, path)
            require_revision(path, expected, None if row is None else row[3])
            done = self._put(
                conn, path, content, size, enabled, sort_order, now_ms(), row, prepared, True
            )
        return build_write(path, done.created, done.overwritten, size, done.revision)

    def edit(
        self,
        path: str,
        old_text: str,
        new_text: str,
        *,
        replace_all: bool = False,
        expected_revision: int | None = None,
    ) -> int:
        """The replacement is built from a read outside the write lock (its size worked
        out from the counts before it is built); under the lock it is stored when the
        document is still at the revision read, else built again there."""
        check_doc_path(path)
        expected = check_expected_revision(expected_revision)
        with self._engine.write() as conn:  # a small document: all of it here, quickly
            row = small_row(conn, path)
            require_revision(path, expected, None if row is None else row[3])
            if row is None:
                raise _not_found(path)
            if row[7] is not None:  # (its result is at most 10 MiB: sized before it is built)
                content, count = edited(row[7], old_text, new_text, replace_all, row[6])
                if content != row[7]:
                    size = check_content(content, "edited content")
                    self._put(conn, path, content, size, None, None, now_ms(), row)
                return count
        seen = self._seen(path)
        require_revision(path, expected, seen[3] if seen else None)
        if seen is None:
            raise _not_found(path)
        content, count = edited(seen[7], old_text, new_text, replace_all, seen[6])
        prepared = prepare_from(path, seen, content, bounded=False) if content != seen[7] else None
        with self._engine.write() as conn:
            row = row_for_write(conn, path)
            require_revision(path, expected, None if row is None else row[3])
            if row is None:
                raise _not_found(path)
            if row[3] != seen[3]:  # changed since the read: build it again on this one
                content, count = edited(row[7], old_text, new_text, replace_all, row[6])
            if content != row[7]:
                size = check_content(content, "edited content")
                self._put(conn, path, content, size, None, None, now_ms(), row, prepared)
        return count

    def append(self, path: str, text: str, *, expected_revision: int | None = None) -> Document:
        check_doc_path(path)
        expected = check_expected_revision(expected_revision)
        check_content(text, "text")
        return self._append(path, text, "", expected)

    def append_daily(self, text: str, *, day: date | None = None) -> Document:
        check_content(text, "text")
        when = check_day(day)
        return self._append(daily_path(when), text, daily_heading(when), None)

    def _append(self, path: str, text: str, heading: str, expected: int | None) -> Document:
        with self._engine.write() as conn:  # a small document: all of it here, quickly
            row = small_row(conn, path)
            require_revision(path, expected, None if row is None else row[3])
            old = heading if row is None else row[7]
            if old is not None and len(old) + len(text) < SMALL // 4:  # <= SMALL bytes
                content = appended(old, text)
                size = check_content(content, "appended content")
                done = self._put(conn, path, content, size, None, None, now_ms(), row)
                return _document(path, content, size, done)
        seen = self._seen(path)
        require_revision(path, expected, seen[3] if seen else None)
        content = appended(seen[7] if seen else heading, text)
        check_content(content, "appended content")
        prepared = prepare_from(path, seen, content, bounded=False)
        with self._engine.write() as conn:
            row = row_for_write(conn, path)
            require_revision(path, expected, None if row is None else row[3])
            if (row[3] if row else 0) != prepared.revision:  # changed since the read
                content = appended(row[7] if row else heading, text)
            size = check_content(content, "appended content")
            done = self._put(conn, path, content, size, None, None, now_ms(), row, prepared)
        return _document(path, content, size, done)

    def delete(self, path: str) -> None:
        check_doc_path(path)
        with self._engine.write() as conn:
            conn.execute(sql.DELETE, (path,))  # revisions and blocks cascade
            if not conn.changes():
                raise _not_found(path)

    def set_enabled(self, path: str, enabled: bool) -> None:
        check_doc_path(path)
        check_bool(enabled, "enabled")
        with self._engine.write() as conn:
            conn.execute(sql.SET_ENABLED, (int(enabled), path))
            if not conn.changes():
                raise _not_found(path)

    def set_sort_order(self, path: str, n: int) -> None:
        check_doc_path(path)
        order = check_sort_order(n)
        with self._engine.write() as conn:
            conn.execute(sql.SET_SORT_ORDER, (order, path))
            if not conn.changes():
                raise _not_found(path)

    def restore(self, path: str, revision: int) -> DocumentWrite:
        check_doc_path(path)
        number = check_revision(revision)
        with self._engine.read() as conn:  # the blocks are cut before the write lock
            content = _revision_content(conn, path, number)
            seen: Any = conn.execute(sql.SELECT_FOR_WRITE, (path,)).fetchall()
        prepared = prepare_from(path, seen[0] if seen else None, content, bounded=True)
        with self._engine.write() as conn:
            content = _revision_content(conn, path, number)  # a numbered revision: the same
            size = check_content(content)
            row = row_for_write(conn, path)
            done = self._put(conn, path, content, size, None, None, now_ms(), row, prepared, True)
        return build_write(path, done.created, done.overwritten, size, done.revision)

    def import_dir(self, folder: str | os.PathLike[str]) -> DocumentImport:
        found, skipped = read_folder(folder)  # before the write lock: file reads are slow
        for _, content in found:
            check_content(content)
        # Cut before the write lock too; a file that would index more than one write may
        # is refused here, before anything is written.
        plans = [
            prepare_from(path, self._seen(path), content, bounded=True) for path, content in found
        ]
        created = updated = unchanged = 0
        now = now_ms()
        with self._engine.write() as conn:  # one transaction: all files or none
            for (path, content), prepared in zip(found, plans, strict=True):
                size = check_content(content)
                row = row_for_write(conn, path)
                done = self._put(conn, path, content, size, None, None, now, row, prepared, True)
                created += done.created
                updated += done.overwritten
                unchanged += not (done.created or done.overwritten)
        return DocumentImport.model_construct(
            created=created, updated=updated, unchanged=unchanged, skipped=skipped
        )

    def _put(
        self,
        conn: apsw.Connection,
        path: str,
        content: str,
        size: int,
        enabled: bool | None,
        sort_order: int | None,
        now: int,
        row: Any,
        prepared: Prepared | None = None,
        bounded: bool = False,
    ) -> _Put:
        """Store `content` at `path` inside the caller's transaction (`row`: its
        SELECT_FOR_WRITE row, read in this transaction; None: no document there).
        `prepared`: the blocks cut outside the lock, used when the document is still at
        the revision they were cut from; `bounded`: a whole new content from the caller
        (write, restore, import_dir), refused when it would index more than one write may."""
        if prepared is not None and prepared.revision != (row[3] if row else 0):
            prepared = None
        if row is None:
            on, order = new_flags(path, enabled, sort_order)
            pk = conn.execute(sql.INSERT, (path, int(on), order, size, now, now, content)).get
            write_blocks(conn, path, pk, None, content, prepared, bounded=bounded)
            return _Put(True, False, on, order, 1, now, now)
        pk, old_on, old_order, revision, created_ms, updated_ms = row[:6]
        on = bool(old_on) if enabled is None else enabled
        order = old_order if sort_order is None else sort_order
        if row[7] == content:
            if on != bool(old_on) or order != old_order:
                conn.execute(sql.UPDATE_FLAGS, (int(on), order, pk))
            return _Put(False, False, on, order, revision, created_ms, updated_ms)
        keep = self._engine.config.doc_revisions
        if keep > 0:
            conn.execute(sql.KEEP_REVISION, (pk,))
        conn.execute(sql.PRUNE_REVISIONS, (pk, prune_below(revision + 1, keep)))
        write_blocks(conn, path, pk, row[7], content, prepared, bounded=bounded)
        conn.execute(sql.UPDATE_CONTENT, (content, size, revision + 1, now, int(on), order, pk))
        return _Put(False, True, on, order, revision + 1, created_ms, now)

    def _seen(self, path: str) -> Any:
        """The SELECT_FOR_WRITE row as it is now (None: no document), read outside the
        write lock (inside an `atomic()` block, on its connection: its own writes)."""
        with self._engine.read() as conn:
            found: list[Any] = conn.execute(sql.SELECT_FOR_WRITE, (path,)).fetchall()
        return found[0] if found else None

    # -- reads --------------------------------------------------------------------------

    def read(self, path: str) -> Document | None:
        check_doc_path(path)
        with self._engine.read() as conn:
            rows: list[Any] = conn.execute(sql.READ, (path,)).fetchall()
        if not rows:
            return None
        p, content, enabled, order, revision, created, updated, size = rows[0]
        return build_document(p, content, enabled, order, revision, created, updated, size)

    def list(self, prefix: str = "") -> list[DocumentInfo]:
        check_prefix(prefix)
        with self._engine.read() as conn:
            rows: list[Any] = conn.execute(sql.LIST, {"prefix": prefix}).fetchall()
        return [build_info(*row) for row in rows]

    def revisions(self, path: str) -> builtins.list[RevisionInfo]:
        check_doc_path(path)
        with self._engine.read() as conn:
            row = conn.execute(sql.PK_AND_REVISION, (path, None)).fetchall()
            if not row:
                raise _not_found(path)
            rows: list[Any] = conn.execute(sql.REVISIONS, (row[0][0],)).fetchall()
        return [build_revision(*r) for r in rows]

    def read_revision(self, path: str, revision: int) -> str:
        check_doc_path(path)
        number = check_revision(revision)
        with self._engine.read() as conn:
            return _revision_content(conn, path, number)

    def search(
        self, query: str, *, top_k: int = 10, prefix: str = ""
    ) -> builtins.list[DocumentHit]:
        check_query(query, "any")
        limit = check_limit(top_k, "top_k")
        check_prefix(prefix)
        compiler = compiler_for(self._engine.tokenizer)
        terms = compiler.terms(query)
        if not terms or limit <= 0:
            return []
        match = compiler.match(query, "any") if len(terms) <= MAX_QUERY_TERMS else None
        with self._engine.read() as conn:
            if match is None:  # a long query: its rarest words, counted in this snapshot
                match = phrases(capped_terms(conn, sql.ANY, terms, "any"), " OR ")
                if match is None:
                    return []
            params = {"query": match, "limit": limit, "prefix": prefix}
            rows: list[Any] = conn.execute(
                sql.SEARCH_PREFIX if prefix else sql.SEARCH, params
            ).fetchall()
        return [build_hit(p, start, end, text, -score) for p, start, end, text, score in rows]

    def render_files(self) -> str:
        with self._engine.read() as conn:
            rows: list[Any] = conn.execute(sql.ENABLED_CONTENTS).fetchall()
        return render_files(rows)

    def render_memory_context(self, *, today: date | None = None, recent_days: int = 7) -> str:
        first, day = recent_window(today, recent_days)
        with self._engine.read() as conn:
            rows: list[Any] = conn.execute(
                sql.MEMORY_CONTEXT, (daily_path(first), daily_path(day))
            ).fetchall()
        memory = None
        notes: dict[date, str] = {}
        for path, content in rows:
            if path == "MEMORY.md":
                memory = content
            elif (when := daily_day(path)) is not None:
                notes[when] = content
        return memory_context(memory, notes, day, first)

    def export_dir(self, folder: str | os.PathLike[str]) -> int:
        with self._engine.read() as conn:  # one snapshot: the files agree with each other
            rows: list[Any] = conn.execute(sql.READ_CONTENTS, {"prefix": ""}).fetchall()
        return write_folder(folder, rows)


def _document(path: str, content: str, size: int, done: _Put) -> Document:
    return build_document(
        path,
        content,
        done.enabled,
        done.sort_order,
        done.revision,
        done.created_ms,
        done.updated_ms,
        size,
    )


def _not_found(path: str) -> DocumentNotFoundError:
    return DocumentNotFoundError(f"no document at {path!r}")


def _revision_content(conn: apsw.Connection, path: str, revision: int) -> str:
    """The content of `revision` (the current one, or a kept previous one)."""
    row = conn.execute(sql.PK_AND_REVISION, (path, revision)).fetchall()
    if not row:
        raise _not_found(path)
    pk, current, content = row[0]
    if revision == current:
        return str(content)
    found = conn.execute(sql.READ_REVISION, (pk, revision)).fetchall()
    if not found:
        raise DocumentNotFoundError(
            f"{path!r} has no revision {revision} (current {current}; pruned or never written)"
        )
    return str(found[0][0])
