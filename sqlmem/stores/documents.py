"""`DocumentStoreFront`: the `DocumentStore` protocol once, over any backend's port.

Every public method checks its arguments here (`rules.documents`), says what a write
means as a `document_changes` value (new content, expected revision, flags, revisions
kept), makes one call into the port, and builds the records from what the port returns.
So a path, a limit or a revision rule is enforced alike on SQLite, PostgreSQL and in
memory, and the backends (`DocumentPort`) only store, index and read.
"""

from __future__ import annotations

import builtins
import os
from datetime import date

from ..doc_records import (
    Document,
    DocumentHit,
    DocumentImport,
    DocumentInfo,
    DocumentWrite,
    RevisionInfo,
)
from ..rules.doc_folders import read_folder, write_folder
from ..rules.doc_render import daily_day, memory_context, recent_window, render_files
from ..rules.doc_writes import NewContent, Put, not_found, revision_text
from ..rules.documents import (
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
)
from ..rules.filters import check_limit, check_query
from .document_changes import Append, Edit, FolderFile, Restore, Write
from .documents_port import DocumentPort, DocumentQuery

__all__ = ["DocumentStoreFront"]


class DocumentStoreFront:
    """`DocumentStore` over a `DocumentPort`; as thread-safe as its port."""

    def __init__(self, port: DocumentPort) -> None:
        self._port = port

    @property
    def port(self) -> DocumentPort:
        """The backend's storage operations (for the backend's own transfer code)."""
        return self._port

    def __repr__(self) -> str:
        return self._port.describe()

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
        check_doc_path(path)
        expected = check_expected_revision(expected_revision)
        size = check_content(content)
        if enabled is not None:
            check_bool(enabled, "enabled")
        if sort_order is not None:
            sort_order = check_sort_order(sort_order)
        keep = self._port.revisions_kept
        change = Write(path, keep, content, size, enabled, sort_order, expected)
        return _written(path, *self._port.change(change))

    def edit(
        self,
        path: str,
        old_text: str,
        new_text: str,
        *,
        replace_all: bool = False,
        expected_revision: int | None = None,
    ) -> int:
        check_doc_path(path)
        expected = check_expected_revision(expected_revision)
        keep = self._port.revisions_kept
        new, _ = self._port.change(Edit(path, keep, old_text, new_text, replace_all, expected))
        return new.found

    def append(self, path: str, text: str, *, expected_revision: int | None = None) -> Document:
        check_doc_path(path)
        expected = check_expected_revision(expected_revision)
        size = check_content(text, "text")
        return self._append(Append(path, self._port.revisions_kept, text, size, "", expected))

    def append_daily(self, text: str, *, day: date | None = None) -> Document:
        size = check_content(text, "text")
        when = check_day(day)
        keep = self._port.revisions_kept
        return self._append(Append(daily_path(when), keep, text, size, daily_heading(when), None))

    def _append(self, change: Append) -> Document:
        new, done = self._port.change(change)
        return build_document(
            change.path,
            new.text,
            done.enabled,
            done.sort_order,
            done.revision,
            done.created_ms,
            done.updated_ms,
            new.size,
        )

    def delete(self, path: str) -> None:
        check_doc_path(path)
        if not self._port.delete(path):  # its revisions and blocks go with it
            raise not_found(path)

    def set_enabled(self, path: str, enabled: bool) -> None:
        check_doc_path(path)
        check_bool(enabled, "enabled")
        if not self._port.set_enabled(path, enabled):
            raise not_found(path)

    def set_sort_order(self, path: str, n: int) -> None:
        check_doc_path(path)
        order = check_sort_order(n)
        if not self._port.set_sort_order(path, order):
            raise not_found(path)

    def restore(self, path: str, revision: int) -> DocumentWrite:
        check_doc_path(path)
        number = check_revision(revision)
        return _written(path, *self._port.change(Restore(path, self._port.revisions_kept, number)))

    def import_dir(self, folder: str | os.PathLike[str]) -> DocumentImport:
        found, skipped = read_folder(folder)  # before the write lock: file reads are slow
        keep = self._port.revisions_kept
        files = [FolderFile(path, keep, content, check_content(content)) for path, content in found]
        created = updated = unchanged = 0
        for _, done in self._port.change_all(files):  # one transaction: all files or none
            created += done.created
            updated += done.overwritten
            unchanged += not (done.created or done.overwritten)
        return DocumentImport.model_construct(
            created=created, updated=updated, unchanged=unchanged, skipped=skipped
        )

    # -- reads --------------------------------------------------------------------------

    def read(self, path: str) -> Document | None:
        check_doc_path(path)
        row = self._port.read(path)
        return None if row is None else build_document(*row)

    def list(self, prefix: str = "") -> builtins.list[DocumentInfo]:
        check_prefix(prefix)
        if "\x00" in prefix:  # no path holds NUL (PostgreSQL text cannot even bind it)
            return []
        return [build_info(*row) for row in self._port.infos(prefix)]

    def revisions(self, path: str) -> builtins.list[RevisionInfo]:
        check_doc_path(path)
        rows = self._port.revision_infos(path)
        if rows is None:
            raise not_found(path)
        return [build_revision(*row) for row in rows]

    def read_revision(self, path: str, revision: int) -> str:
        check_doc_path(path)
        number = check_revision(revision)
        return revision_text(path, number, self._port.revision_text(path, number))

    def search(
        self, query: str, *, top_k: int = 10, prefix: str = ""
    ) -> builtins.list[DocumentHit]:
        check_query(query, "any")
        limit = check_limit(top_k, "top_k")
        check_prefix(prefix)
        terms = self._port.compiler.terms(query)
        if not terms or limit <= 0 or "\x00" in prefix:
            return []
        rows = self._port.search(DocumentQuery(query, terms, limit, prefix))
        return [build_hit(*row) for row in rows]

    def render_files(self) -> str:
        return render_files(self._port.enabled_contents())

    def render_memory_context(self, *, today: date | None = None, recent_days: int = 7) -> str:
        first, day = recent_window(today, recent_days)
        memory = None
        notes: dict[date, str] = {}
        for path, content in self._port.memory_contents(daily_path(first), daily_path(day)):
            if path == "MEMORY.md":
                memory = content
            elif (when := daily_day(path)) is not None:
                notes[when] = content
        return memory_context(memory, notes, day, first)

    def export_dir(self, folder: str | os.PathLike[str]) -> int:
        return write_folder(folder, self._port.all_contents())  # one snapshot: files agree


def _written(path: str, new: NewContent, done: Put) -> DocumentWrite:
    return build_write(path, done.created, done.overwritten, new.size, done.revision)
