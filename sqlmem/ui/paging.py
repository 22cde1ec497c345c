"""Pages of the inspector's lists: by offset (facts, which the stores page) and by key
(sessions and documents, whose position in the list is named by the last row shown, so a
session or document added meanwhile never shifts or repeats a row).

A page asks for at most one page plus one row where the store can bound its read; the
extra row says whether a next page exists.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["PAGE_SIZE", "KeyPage", "Page", "key_page", "paged"]

T = TypeVar("T")

#: Rows per page: small enough for a fast page on a huge file, big enough to read.
PAGE_SIZE = 50


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list: its rows, where it starts, and whether more follow.
    `scanned`: how many rows were looked at, when only some of them are shown.
    `next_params`: the query of the next page when a cursor, not the offset, reads it."""

    rows: list[T]
    offset: int
    has_next: bool
    size: int = PAGE_SIZE
    scanned: int | None = None
    next_params: dict[str, Any] | None = None

    @property
    def has_previous(self) -> bool:
        return self.offset > 0

    @property
    def next_offset(self) -> int:
        return self.offset + self.size

    @property
    def previous_offset(self) -> int:
        return max(0, self.offset - self.size)


def paged(rows: list[T], offset: int, size: int = PAGE_SIZE) -> Page[T]:
    """A page from rows fetched with `limit=size + 1` at `offset`."""
    return Page(rows[:size], offset, len(rows) > size, size)


@dataclass(frozen=True)
class KeyPage(Generic[T]):
    """One page of a list ordered by a key, and the keys that name its neighbours:
    `after` (the next page starts after it) and `before` (the previous one ends before
    it); None where there is no such page."""

    rows: list[T]
    after: str | None
    before: str | None


def key_page(
    ordered: Sequence[T],
    sort_key: Callable[[T], Any],
    cursor: Callable[[T], str],
    *,
    after: Any = None,
    before: Any = None,
    size: int = PAGE_SIZE,
) -> KeyPage[T]:
    """The page of `ordered` (sorted by `sort_key`) just after the key `after`, just
    before the key `before`, or (neither) the first page."""
    keys = [sort_key(row) for row in ordered]
    if before is not None:
        end = bisect_left(keys, before)
        start = max(0, end - size)
    else:
        start = 0 if after is None else bisect_right(keys, after)
        end = start + size
    rows = list(ordered[start:end])
    following = cursor(rows[-1]) if rows and end < len(ordered) else None
    previous = cursor(rows[0]) if rows and start > 0 else None
    return KeyPage(rows, following, previous)
