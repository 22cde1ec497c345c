"""What a document write decides, written once for every backend.

A write reads the document as it is under the backend's write lock (`Stored`), works out
the new content from it (`NewContent`: the caller's, an edit's, an append's, a restored
revision's), and decides what changes (`Put`): a new document with its default flags, a
new revision (the previous content kept, older ones pruned), only the flags, or nothing
at all when the content and flags are the ones stored. Backends execute a `Put`; they
never decide one, so every backend counts revisions and keeps flags alike.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import DocumentNotFoundError
from .documents import imported_revision, new_flags, prune_below

__all__ = [
    "ImportedDocument",
    "NewContent",
    "Put",
    "RevisionText",
    "Stored",
    "imports_revision",
    "merge_imported_document",
    "not_found",
    "plan_put",
    "revision_text",
]


class Stored(NamedTuple):
    """A document as a write reads it under the write lock (`content` in full)."""

    enabled: bool
    sort_order: int
    revision: int
    created_ms: int
    updated_ms: int
    size: int
    content: str


class NewContent(NamedTuple):
    """The content a write stores, its UTF-8 size (checked against the limit), and for
    an edit the number of times it found its text (`found`)."""

    text: str
    size: int
    found: int = 0


class Put(NamedTuple):
    """What a write changes, and the document's state afterwards.

    `created`: insert a new document. `overwritten`: a new revision; the previous content
    is kept when `keep_previous`, and kept revisions numbered below `prune_below` go.
    Neither: only the flags change when `flags_changed`, else nothing."""

    created: bool
    overwritten: bool
    enabled: bool
    sort_order: int
    revision: int
    created_ms: int
    updated_ms: int
    flags_changed: bool = False
    keep_previous: bool = False
    prune_below: int = 0


class RevisionText(NamedTuple):
    """A document's current revision number, and the content of the revision asked for
    (None: not kept)."""

    current: int
    content: str | None


def plan_put(
    path: str,
    stored: Stored | None,
    content: str,
    enabled: bool | None,
    sort_order: int | None,
    now: int,
    keep: int,
) -> Put:
    """The change that stores `content` at `path` over `stored` (None: no document);
    flags left None keep the stored ones (a new document takes its path's defaults);
    `keep`: how many previous revisions the store keeps."""
    if stored is None:
        on, order = new_flags(path, enabled, sort_order)
        return Put(True, False, on, order, 1, now, now, False, False, 0)
    on = stored.enabled if enabled is None else enabled
    order = stored.sort_order if sort_order is None else sort_order
    if stored.content == content:
        flags_changed = on != stored.enabled or order != stored.sort_order
        return Put(
            False,
            False,
            on,
            order,
            stored.revision,
            stored.created_ms,
            stored.updated_ms,
            flags_changed,
            False,
            0,
        )
    revision = stored.revision + 1
    return Put(
        False,
        True,
        on,
        order,
        revision,
        stored.created_ms,
        now,
        False,
        keep > 0,
        prune_below(revision, keep),
    )


def not_found(path: str) -> DocumentNotFoundError:
    return DocumentNotFoundError(f"no document at {path!r}")


def revision_text(path: str, revision: int, found: RevisionText | None) -> str:
    """The content of `revision` from what the store found (None: no document at `path`),
    or DocumentNotFoundError saying why there is none."""
    if found is None:
        raise not_found(path)
    if found.content is None:
        raise DocumentNotFoundError(
            f"{path!r} has no revision {revision} (current {found.current}; "
            "pruned or never written)"
        )
    return found.content


class ImportedDocument(NamedTuple):
    """What importing a document record over the stored document of its path does: when
    `replaces`, the record's content becomes revision `revision`, the stored content is
    kept first when `keep_current`, and kept revisions below `prune_below` go."""

    replaces: bool
    revision: int
    keep_current: bool
    prune_below: int


def merge_imported_document(
    stored_revision: int,
    stored_updated_ms: int,
    stored_content: str,
    revision: int,
    updated_ms: int,
    content: str,
    keep: int,
) -> ImportedDocument:
    """The import merge of a document record (`revision`, `updated_ms`, `content`) over
    a stored document: a higher revision, or the same with a later `updated_at`, replaces
    it, and the replaced content is always kept as the revision it was (`imported_revision`);
    an equal or older record changes nothing, so importing a file twice adds nothing."""
    if (revision, updated_ms) <= (stored_revision, stored_updated_ms):
        return ImportedDocument(False, stored_revision, False, 0)
    number = imported_revision(stored_revision, stored_content, revision, content)
    keep_current = keep > 0 and stored_revision < number
    return ImportedDocument(True, number, keep_current, prune_below(number, keep))


def imports_revision(current: int, keep: int, revision: int) -> bool:
    """Whether the import adds a kept-revision record numbered `revision` to a document at
    `current` (0: no document): below the current one, and among the last `keep`."""
    return prune_below(current, keep) <= revision < current
