"""The document writes `DocumentStoreFront` hands its port: one class per kind of write.

Each says how the new content follows from the stored document (`new_content`, which
also checks the expected revision and the content limit, so a port that calls it again
after a concurrent change checks again) and what storing it decides (`put`, the shared
`rules.doc_writes.plan_put`). They are built once per call, after the arguments are
checked, and never changed after (plain slotted classes: a frozen dataclass costs a
microsecond more to build, on every write).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..rules.doc_writes import NewContent, Put, RevisionText, Stored, not_found, plan_put
from ..rules.doc_writes import revision_text as kept_content
from ..rules.documents import appended, check_content, edited, require_revision

__all__ = ["Append", "Edit", "FolderFile", "Restore", "Write"]


@dataclass(slots=True)
class _Change:
    path: str
    #: How many previous revisions the store keeps.
    keep: int

    @property
    def bounded(self) -> bool:
        return True

    @property
    def at_least(self) -> int:
        return 0

    @property
    def source_revision(self) -> int | None:
        return None

    def put(self, stored: Stored | None, new: NewContent, now: int) -> Put:
        return plan_put(self.path, stored, new.text, None, None, now, self.keep)


@dataclass(slots=True)
class Write(_Change):
    """`write`: the caller's content, with its flags, at the expected revision."""

    content: str
    size: int
    enabled: bool | None
    sort_order: int | None
    expected: int | None

    @property
    def at_least(self) -> int:
        return self.size

    def new_content(self, stored: Stored | None, source: RevisionText | None) -> NewContent:
        require_revision(self.path, self.expected, None if stored is None else stored.revision)
        return NewContent(self.content, self.size)

    def put(self, stored: Stored | None, new: NewContent, now: int) -> Put:
        return plan_put(self.path, stored, new.text, self.enabled, self.sort_order, now, self.keep)


@dataclass(slots=True)
class FolderFile(_Change):
    """A file of `import_dir`: its content, whatever the stored revision."""

    content: str
    size: int

    @property
    def at_least(self) -> int:
        return self.size

    def new_content(self, stored: Stored | None, source: RevisionText | None) -> NewContent:
        return NewContent(self.content, self.size)


@dataclass(slots=True)
class Edit(_Change):
    """`edit`: the stored content with `old_text` replaced (sized before it is built)."""

    old_text: str
    new_text: str
    replace_all: bool
    expected: int | None

    @property
    def bounded(self) -> bool:
        return False  # it re-indexes only the blocks around the replaced text

    def new_content(self, stored: Stored | None, source: RevisionText | None) -> NewContent:
        require_revision(self.path, self.expected, None if stored is None else stored.revision)
        if stored is None:
            raise not_found(self.path)
        content, count = edited(
            stored.content, self.old_text, self.new_text, self.replace_all, stored.size
        )
        if content == stored.content:
            return NewContent(content, stored.size, found=count)
        return NewContent(content, check_content(content, "edited content"), found=count)


@dataclass(slots=True)
class Append(_Change):
    """`append` and `append_daily`: a line added to the stored content, or to `heading`
    when there is no document yet."""

    text: str
    text_size: int
    heading: str
    expected: int | None

    @property
    def bounded(self) -> bool:
        return False  # it re-indexes only the blocks around its end

    @property
    def at_least(self) -> int:
        return self.text_size

    def new_content(self, stored: Stored | None, source: RevisionText | None) -> NewContent:
        require_revision(self.path, self.expected, None if stored is None else stored.revision)
        content = appended(self.heading if stored is None else stored.content, self.text)
        return NewContent(content, check_content(content, "appended content"))


@dataclass(slots=True)
class Restore(_Change):
    """`restore`: the content of a kept (or the current) revision, read by the port."""

    revision: int

    @property
    def source_revision(self) -> int | None:
        return self.revision

    def new_content(self, stored: Stored | None, source: RevisionText | None) -> NewContent:
        content = kept_content(self.path, self.revision, source)
        return NewContent(content, check_content(content))
