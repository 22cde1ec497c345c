"""`DocumentPort`: what a backend executes for `DocumentStoreFront`.

Every input is already checked and every decision already made (`rules.doc_writes`): the
front hands a port a `DocumentChange` (the path, how its new content follows from the
stored one, what the write decides) or a `DocumentQuery`, and the port runs it against
its storage. Rows come back as plain tuples in the orders named below; the front builds
the records. A port decides only what is about its storage: when to take its write lock,
what it may read before, how it cuts and indexes blocks.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..rules.doc_writes import NewContent, Put, RevisionText, Stored
from ..search.query import QueryCompiler, Term

__all__ = ["DocumentChange", "DocumentPort", "DocumentQuery"]

#: `read`: (path, content, enabled, sort_order, revision, created_ms, updated_ms, size).
DocumentRow = tuple[Any, ...]
#: `infos`: (path, enabled, sort_order, revision, created_ms, updated_ms, size).
InfoRow = tuple[Any, ...]
#: `revision_infos`: (revision, size, updated_ms), newest first.
RevisionRow = tuple[Any, ...]
#: `search`: (path, start_line, end_line, text, score), best first.
HitRow = tuple[Any, ...]


@runtime_checkable
class DocumentChange(Protocol):
    """One document write, as the front describes it to a port.

    A port reads the stored document under its write lock (and the content of
    `source_revision` when it is set), calls `new_content` and then `put`, and executes
    the `Put`. A port that prepares outside its lock may call `new_content` there too,
    then again under the lock when the document has changed since (it is a pure function
    of what it is given). `bounded`: the change brings a whole new content (write,
    restore, a folder import's file), so a backend that bounds the indexing one write may
    do refuses it when larger; `at_least`: the new content has at least this many UTF-8
    bytes (so a port can tell a large write before reading anything)."""

    @property
    def path(self) -> str: ...

    @property
    def bounded(self) -> bool: ...

    @property
    def at_least(self) -> int: ...

    @property
    def source_revision(self) -> int | None: ...

    def new_content(self, stored: Stored | None, source: RevisionText | None) -> NewContent: ...

    def put(self, stored: Stored | None, new: NewContent, now: int) -> Put: ...


@dataclass(frozen=True, slots=True)
class DocumentQuery:
    """A checked document search: `terms` compiled from `query` (never empty), `limit`
    above 0, blocks of documents whose path starts with `prefix`."""

    query: str
    terms: tuple[Term, ...]
    limit: int
    prefix: str


@runtime_checkable
class DocumentPort(Protocol):
    """The storage operations under `DocumentStoreFront`."""

    @property
    def compiler(self) -> QueryCompiler:
        """The query compiler of the store's tokenizer."""
        ...

    @property
    def revisions_kept(self) -> int:
        """How many previous revisions of a document are kept."""
        ...

    def describe(self) -> str:
        """The store's repr."""
        ...

    # -- writes: the stored document read, changed and written under the write lock ------

    def change(self, change: DocumentChange) -> tuple[NewContent, Put]: ...

    def change_all(
        self, changes: Sequence[DocumentChange]
    ) -> builtins.list[tuple[NewContent, Put]]:
        """All in one transaction (all or none), with one `now`."""
        ...

    def delete(self, path: str) -> bool:
        """False: no document there."""
        ...

    def set_enabled(self, path: str, enabled: bool) -> bool: ...

    def set_sort_order(self, path: str, order: int) -> bool: ...

    # -- reads ------------------------------------------------------------------------------

    def read(self, path: str) -> DocumentRow | None: ...

    def infos(self, prefix: str) -> Iterable[InfoRow]:
        """In sort order, then path."""
        ...

    def revision_infos(self, path: str) -> builtins.list[RevisionRow] | None:
        """The kept revisions, newest first; None: no document there."""
        ...

    def revision_text(self, path: str, revision: int) -> RevisionText | None:
        """None: no document there."""
        ...

    def search(self, query: DocumentQuery) -> Iterable[HitRow]: ...

    def enabled_contents(self) -> Iterable[tuple[str, str]]:
        """(path, content) of the enabled documents, in sort order, then path."""
        ...

    def memory_contents(self, first: str, last: str) -> Iterable[tuple[str, str]]:
        """(path, content) of MEMORY.md and of the paths from `first` to `last`."""
        ...

    def all_contents(self) -> builtins.list[tuple[str, str]]:
        """(path, content) of every document by path, in one snapshot."""
        ...
