"""The records of the workspace documents: what `DocumentStore` returns.

Output only: the stores build them from values they checked on the way in, without
validation (`sqlmem.rules.documents`), as every other record read back is built. They are
pydantic models like the other records, so they dump, compare and print alike.
"""

from __future__ import annotations

from datetime import datetime

from .records import _Record

__all__ = [
    "Document",
    "DocumentHit",
    "DocumentImport",
    "DocumentInfo",
    "DocumentWrite",
    "RevisionInfo",
]


class DocumentInfo(_Record):
    """A document without its content: what `list` returns.

    `revision` is 1 when created and grows by one with every change of content;
    `updated_at` is when the content last changed (flags do not move it); `size` is the
    content's length in UTF-8 bytes.
    """

    path: str
    enabled: bool
    sort_order: int
    revision: int
    created_at: datetime
    updated_at: datetime
    size: int


class Document(DocumentInfo):
    """A document with its current content."""

    content: str


class DocumentWrite(_Record):
    """What a write did: `created` a new document, `overwritten` a different content
    (both False when the content was identical, which changes nothing)."""

    path: str
    created: bool
    overwritten: bool
    bytes: int
    revision: int


class RevisionInfo(_Record):
    """One kept previous content: its revision number, UTF-8 size, and when it was
    written."""

    revision: int
    size: int
    updated_at: datetime


class DocumentHit(_Record):
    """A block (a run of non-blank lines) matching a search; lines numbered from 1,
    `score` higher is better (comparable within one result list)."""

    path: str
    start_line: int
    end_line: int
    text: str
    score: float


class DocumentImport(_Record):
    """What `import_dir` did: documents created, updated (a new revision), unchanged,
    and entries skipped (symlinks, other files, invalid names, unreadable text)."""

    created: int
    updated: int
    unchanged: int
    skipped: int
