"""The rules of the workspace documents, written once for every backend.

Paths, content limits, the defaults of a new document, what `edit`, `append` and
`append_daily` make of a content, how many revisions are kept, and the records built from
stored values. The SQLite store and the in-memory twin both call these, so they cannot
drift apart; the search blocks are in `doc_blocks`, the folder sync in `doc_folders`, the
prompt blocks in `doc_render`.
"""

from __future__ import annotations

import operator
import re
from datetime import date, datetime, timezone
from typing import Any

from ..doc_records import Document, DocumentHit, DocumentInfo, DocumentWrite, RevisionInfo
from ..errors import EditMismatchError, InvalidArgumentError, RevisionConflictError
from .encoding import dt_from_ms
from .rows import _unvalidated

__all__ = [
    "MAX_CONTENT_BYTES",
    "MAX_PATH_LENGTH",
    "appended",
    "build_document",
    "build_hit",
    "build_info",
    "build_revision",
    "build_write",
    "check_bool",
    "check_content",
    "check_day",
    "check_doc_path",
    "check_expected_revision",
    "check_prefix",
    "check_revision",
    "check_sort_order",
    "daily_heading",
    "daily_path",
    "edited",
    "imported_revision",
    "new_flags",
    "prune_below",
    "require_revision",
    "utf8_size",
]

MAX_PATH_LENGTH = 255
#: 10 MiB of UTF-8: a document is a prompt's worth of text, not a data store.
MAX_CONTENT_BYTES = 10 * 1024 * 1024

# Segments of ASCII letters, digits, '.', '_', '-', none starting with '.' (so no '.',
# '..' or hidden names), joined by single '/' (so no empty segment, no leading '/'),
# the last ending in '.md'. ASCII only, as agent ids: file systems normalise and
# case-fold other letters differently, so two paths could name one file on export.
# `\Z`, not `$`: `$` would also accept a trailing newline.
_PATH = re.compile(
    r"(?:[A-Za-z0-9_-][A-Za-z0-9._-]*/)*[A-Za-z0-9_-][A-Za-z0-9._-]*\.md\Z", re.ASCII
)
_SEGMENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*\Z", re.ASCII)

#: The prompt files an agent reads every turn: enabled when created, in this order, at the
#: top level.
_PROMPT_FILES = ("AGENTS.md", "SOUL.md", "PROFILE.md", "MEMORY.md")
_OTHER_SORT_ORDER = 100
_MAX_INT = 2**63 - 1


def _shown(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:77] + "...")


def check_doc_path(path: Any) -> str:
    """A document path, or InvalidArgumentError naming it (before anything is touched)."""
    if not isinstance(path, str):
        raise InvalidArgumentError(f"document path must be a str, not {type(path).__name__}")
    if len(path) > MAX_PATH_LENGTH:
        raise InvalidArgumentError(
            f"document path {_shown(path)} is {len(path)} characters; at most {MAX_PATH_LENGTH}"
        )
    if _PATH.match(path) is None:
        raise InvalidArgumentError(
            f"document path {_shown(path)} is not allowed: use a relative path of segments "
            "of ASCII letters, digits, '.', '_' or '-' joined by '/', none starting with "
            "'.', ending in '.md' (no '..', no leading '/', no '\\', no empty segment)"
        )
    return path


def is_doc_path(path: str) -> bool:
    return len(path) <= MAX_PATH_LENGTH and _PATH.match(path) is not None


def is_folder_name(name: str) -> bool:
    """A folder name a document path may hold (for the folder import's walk)."""
    return _SEGMENT.match(name) is not None


def check_prefix(prefix: Any) -> str:
    """A `list`/`search` prefix: any str UTF-8 can hold (it only narrows by `startswith`)."""
    if not isinstance(prefix, str):
        raise InvalidArgumentError(f"prefix must be a str, not {type(prefix).__name__}")
    _utf8(prefix, "prefix")
    return prefix


def utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _utf8(text: str, name: str) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidArgumentError(
                f"{name} contains a lone surrogate, which UTF-8 cannot store"
            ) from None


def check_content(content: Any, name: str = "content") -> int:
    """Text up to `MAX_CONTENT_BYTES` of UTF-8; returns its size in bytes."""
    if not isinstance(content, str):
        raise InvalidArgumentError(f"{name} must be a str, not {type(content).__name__}")
    _utf8(content, name)
    size = utf8_size(content)
    if size > MAX_CONTENT_BYTES:
        raise InvalidArgumentError(
            f"{name} is {size} bytes of UTF-8; a document holds at most {MAX_CONTENT_BYTES} "
            "(10 MiB)"
        )
    return size


def check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def check_sort_order(value: Any, name: str = "sort_order") -> int:
    """Any integer type (numpy's too) within SQLite's 64 bits, never a bool."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be an integer, not bool")
    try:
        number = operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{name} must be an integer") from None
    if not -_MAX_INT - 1 <= number <= _MAX_INT:
        raise InvalidArgumentError(f"{name} must fit in 64 bits, got {number}")
    return number


def check_revision(value: Any) -> int:
    return check_sort_order(value, "revision")


def check_expected_revision(value: Any) -> int | None:
    """`expected_revision`: None (no check), or the revision the caller read (0: the
    document must not exist)."""
    if value is None:
        return None
    number = check_sort_order(value, "expected_revision")
    if number < 0:
        raise InvalidArgumentError(f"expected_revision must be >= 0, got {number}")
    return number


def require_revision(path: str, expected: int | None, current: int | None) -> None:
    """RevisionConflictError unless the document (`current`: its revision, None when it
    does not exist) is still at `expected`: the first thing a change checks, so a writer
    that read an older revision learns it before anything else is said about its change."""
    if expected is None:
        return
    now = 0 if current is None else current
    if now != expected:
        state = "does not exist" if current is None else f"is at revision {current}"
        wanted = "not to exist" if expected == 0 else f"at revision {expected}"
        raise RevisionConflictError(
            f"document {path!r} {state}; the change expected it {wanted} "
            "(another writer changed it): nothing was changed"
        )


def check_day(day: Any) -> date:
    """`append_daily`'s day: a date (default today in UTC); a datetime counts by its
    UTC date (a naive one is taken as UTC)."""
    if day is None:
        return datetime.now(timezone.utc).date()
    if isinstance(day, datetime):
        return (day if day.tzinfo is None else day.astimezone(timezone.utc)).date()
    if not isinstance(day, date):
        raise InvalidArgumentError(f"day must be a datetime.date, not {type(day).__name__}")
    return day


# -- what a write makes ---------------------------------------------------------------------


def new_flags(path: str, enabled: bool | None, sort_order: int | None) -> tuple[bool, int]:
    """`(enabled, sort_order)` of a new document: the prompt files are enabled and come
    first (0-3), at the top level only; anything else is disabled and 100."""
    if path in _PROMPT_FILES:
        default_enabled, default_order = True, _PROMPT_FILES.index(path)
    else:
        default_enabled, default_order = False, _OTHER_SORT_ORDER
    return (
        default_enabled if enabled is None else enabled,
        default_order if sort_order is None else sort_order,
    )


def edited(
    content: str, old_text: Any, new_text: Any, replace_all: Any, size: int | None = None
) -> tuple[str, int]:
    """`content` with `old_text` replaced: (new content, replacements), or
    EditMismatchError saying how many times `old_text` was found.

    The size of the result is worked out from the counts first (`size`: the content's
    UTF-8 bytes, when the caller knows them) and a result over the limit is refused
    before it is built: one `replace_all` of a short text by a long one could otherwise
    ask for gigabytes."""
    found, at = _occurrences(content, old_text, new_text, replace_all)
    _edited_bytes(content, old_text, new_text, found, size)
    if at < 0:
        return content.replace(old_text, new_text), found
    return content[:at] + new_text + content[at + len(old_text) :], 1


def _occurrences(content: str, old_text: Any, new_text: Any, replace_all: Any) -> tuple[int, int]:
    """(replacements, where the single one starts, or -1 for `replace_all`)."""
    if not isinstance(old_text, str) or not isinstance(new_text, str):
        raise InvalidArgumentError("edit: old_text and new_text must be str")
    check_bool(replace_all, "replace_all")
    if not old_text:
        raise EditMismatchError("edit: old_text is empty; give the exact text to replace")
    _utf8(new_text, "new_text")
    if replace_all:
        found = content.count(old_text)
        if found:
            return found, -1
    else:
        # One scan for the usual case (found once), not a count and then a replace.
        at = content.find(old_text)
        if at >= 0 and content.find(old_text, at + len(old_text)) < 0:
            return 1, at
        found = content.count(old_text)
    if found == 0:
        raise EditMismatchError("edit: old_text was found 0 times in the document")
    raise EditMismatchError(
        f"edit: old_text was found {found} times; give more context to make it unique, "
        "or pass replace_all=True"
    )


def _edited_bytes(content: str, old_text: str, new_text: str, found: int, size: int | None) -> int:
    before = utf8_size(content) if size is None else size
    after = before + found * (utf8_size(new_text) - utf8_size(old_text))
    if after > MAX_CONTENT_BYTES:
        raise InvalidArgumentError(
            f"edited content would be {after} bytes of UTF-8 ({found} replacements); a "
            f"document holds at most {MAX_CONTENT_BYTES} (10 MiB): nothing was changed"
        )
    return after


def appended(content: str, text: str) -> str:
    """`text` as a new line at the end of `content`."""
    if not content or content.endswith("\n"):
        return content + text
    return f"{content}\n{text}"


def daily_path(day: date) -> str:
    return f"memory/{day.isoformat()}.md"


def daily_heading(day: date) -> str:
    """A new daily note's start: its heading line and a blank line."""
    return f"# {day.isoformat()}\n\n"


def imported_revision(stored: int, stored_content: str, imported: int, content: str) -> int:
    """The revision an imported document record takes over a stored one it replaces (the
    import merge: a higher number, or the same number with a later `updated_at`). Its own
    number, unless that is the stored one's and the contents differ: then the next, so
    the stored content is kept as the revision it was, never overwritten unrecorded."""
    if imported <= stored and content != stored_content:
        return stored + 1
    return imported


def prune_below(revision: int, keep: int) -> int:
    """Previous contents numbered below this are dropped once `revision` is current
    (the last `keep` previous ones, `revision - keep` .. `revision - 1`, stay)."""
    return revision - keep


# -- records from stored values (no validation: the engine wrote them) -----------------------

_DOCUMENT = frozenset(Document.model_fields)
_INFO = frozenset(DocumentInfo.model_fields)
_WRITE = frozenset(DocumentWrite.model_fields)
_REVISION = frozenset(RevisionInfo.model_fields)
_HIT = frozenset(DocumentHit.model_fields)


def build_document(
    path: str,
    content: str,
    enabled: int,
    sort_order: int,
    revision: int,
    created_ms: int,
    updated_ms: int,
    size: int,
) -> Document:
    values = {
        "path": path,
        "enabled": bool(enabled),
        "sort_order": sort_order,
        "revision": revision,
        "created_at": dt_from_ms(created_ms),
        "updated_at": dt_from_ms(updated_ms),
        "size": size,
        "content": content,
    }
    return _unvalidated(Document, _DOCUMENT, values)  # type: ignore[no-any-return]


def build_info(
    path: str,
    enabled: int,
    sort_order: int,
    revision: int,
    created_ms: int,
    updated_ms: int,
    size: int,
) -> DocumentInfo:
    values = {
        "path": path,
        "enabled": bool(enabled),
        "sort_order": sort_order,
        "revision": revision,
        "created_at": dt_from_ms(created_ms),
        "updated_at": dt_from_ms(updated_ms),
        "size": size,
    }
    return _unvalidated(DocumentInfo, _INFO, values)  # type: ignore[no-any-return]


def build_write(
    path: str, created: bool, overwritten: bool, size: int, revision: int
) -> DocumentWrite:
    values = {
        "path": path,
        "created": created,
        "overwritten": overwritten,
        "bytes": size,
        "revision": revision,
    }
    return _unvalidated(DocumentWrite, _WRITE, values)  # type: ignore[no-any-return]


def build_revision(revision: int, size: int, updated_ms: int) -> RevisionInfo:
    values = {"revision": revision, "size": size, "updated_at": dt_from_ms(updated_ms)}
    return _unvalidated(RevisionInfo, _REVISION, values)  # type: ignore[no-any-return]


def build_hit(path: str, start_line: int, end_line: int, text: str, score: float) -> DocumentHit:
    values = {
        "path": path,
        "start_line": start_line,
        "end_line": end_line,
        "text": text,
        "score": score,
    }
    return _unvalidated(DocumentHit, _HIT, values)  # type: ignore[no-any-return]
