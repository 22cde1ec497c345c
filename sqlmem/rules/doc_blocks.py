"""Search blocks of a workspace document: how a content is cut into blocks (runs
of non-blank lines), and where two contents differ, by lines.

`split_blocks` is used by every backend (the blocks are what search ranks);
`changed_lines` and `lines_between` let the SQLite store re-index only the blocks around
an edit instead of the whole document.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Block", "Change", "changed_lines", "lines_between", "split_blocks"]


# -- search blocks --------------------------------------------------------------------------


class Block(NamedTuple):
    """A run of non-blank lines: first and last line numbers (from 1) and its text."""

    start_line: int
    end_line: int
    text: str


def split_blocks(content: str) -> list[Block]:
    """The blocks of a content: runs of lines that are not blank (whitespace only).

    Lines are split on '\\n' only (a '\\r' before it stays in the line, and is blank
    space), so line numbers are those an editor shows for LF and CRLF files alike.
    """
    blocks: list[Block] = []
    lines = content.split("\n")
    start = -1
    for number, line in enumerate(lines, start=1):
        if line.strip():
            if start < 0:
                start = number
        elif start > 0:
            blocks.append(Block(start, number - 1, "\n".join(lines[start - 1 : number - 1])))
            start = -1
    if start > 0:
        blocks.append(Block(start, len(lines), "\n".join(lines[start - 1 :])))
    return blocks


class Change(NamedTuple):
    """Where two contents differ, by lines (1-based): lines before `first` are the same in
    both, and so are the lines after `old_last` in the old content and after `new_last`
    in the new one (they are as many). `start` is where the line `first` starts (the same
    offset in both); `new_end` is where the line `new_last` ends in the new content."""

    first: int
    old_last: int
    new_last: int
    start: int
    new_end: int


def changed_lines(old: str, new: str) -> Change:
    """The lines an edit may have changed, found from the common prefix and suffix (a few
    compares of 4 KB slices, not a walk over every line), so a store re-indexes only the
    blocks around a change. Conservative: a line partly changed counts as changed."""
    prefix = _common_prefix(old, new)
    suffix = _common_suffix(old, new, min(len(old), len(new)) - prefix)
    first = old.count("\n", 0, prefix) + 1
    old_last = old.count("\n", 0, len(old) - suffix) + 1
    new_last = new.count("\n", 0, len(new) - suffix) + 1
    end = new.find("\n", len(new) - suffix)
    return Change(
        first, old_last, new_last, old.rfind("\n", 0, prefix) + 1, len(new) if end < 0 else end
    )


def lines_between(text: str, change: Change, first: int, last: int) -> str:
    """Lines `first`..`last` of `text` (the new content), which hold the lines
    `change.first`..`change.new_last`: found by walking the few lines around the change."""
    start = change.start
    for _ in range(change.first - first):
        start = text.rfind("\n", 0, start - 1) + 1
    end = change.new_end
    for _ in range(last - change.new_last):
        found = text.find("\n", end + 1)
        end = len(text) if found < 0 else found
    return text[start:end]


_CHUNK = 4096


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n:
        k = min(_CHUNK, n - i)
        if a[i : i + k] == b[i : i + k]:
            i += k
            continue
        lo, hi = i, i + k  # a[i:lo] == b[i:lo]; a mismatch lies in [lo, hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if a[lo:mid] == b[lo:mid]:
                lo = mid
            else:
                hi = mid
        return lo
    return n


def _common_suffix(a: str, b: str, limit: int) -> int:
    """The length of the common suffix, at most `limit`."""
    la, lb = len(a), len(b)
    j = 0
    while j < limit:
        k = min(_CHUNK, limit - j)
        if a[la - j - k : la - j] == b[lb - j - k : lb - j]:
            j += k
            continue
        lo, hi = j, j + k  # suffixes of length lo agree; a mismatch within the next hi - lo
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if a[la - mid : la - lo] == b[lb - mid : lb - lo]:
                lo = mid
            else:
                hi = mid
        return lo
    return limit
