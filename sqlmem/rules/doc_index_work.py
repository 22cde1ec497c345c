"""How much search indexing one document change costs, worked out from the texts alone, and
the bound on it that keeps every document write short under the write lock.

A change re-indexes only the blocks around it (`doc_blocks.changed_lines`, widened to the
blocks that touch it); `plan_index` finds that region from the two texts, with no
database, so the SQLite store cuts and segments the new blocks before it takes the write
lock, and every backend refuses the same changes.

Why a bound: SQLite's full-text index costs per block and per word inside the write
transaction (FTS5 tokenizes every block it adds): measured here about 30-40 microseconds
a block, 1 a word of prose and up to 8 a word of distinct tokens (a log of ids); 2.4 MB
of short paragraphs held the file's write lock 12-20 s and every other writer of the
file timed out behind it. A write's work is the words of the blocks it adds plus
`BLOCK_WORK` per block; a `write` (or `restore`, or a file of `import_dir`) above
`MAX_INDEX_WORK` is refused with InvalidArgumentError before anything is written. The
worst hold measured at the bound is under 1 s idle (one block of 100,000 distinct random
words); prose of about 700 KB, 5,000 one-line blocks or a 10 MiB single block take
0.1-0.6 s. Larger documents are built by appends and edits, which re-index only the
blocks around them and are never refused (an edit or append inside one very long run of
non-blank lines re-indexes that whole run: keep blank lines between entries). The
SQLite store and its in-memory twin apply the bound; on PostgreSQL a document write
holds only its agent's document-writer row (other agents and stores never wait), so it
is not bounded there.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import InvalidArgumentError
from .doc_blocks import Block, changed_lines, lines_between, split_blocks

__all__ = [
    "BLOCK_WORK",
    "MAX_INDEX_WORK",
    "IndexPlan",
    "check_index_work",
    "check_write_work",
    "plan_index",
    "words",
]

#: The work one write may do in the index: words added + BLOCK_WORK a block added.
MAX_INDEX_WORK = 100_000
#: A block's own cost, in words (a row, its trigger and its index entry).
BLOCK_WORK = 20


class IndexPlan(NamedTuple):
    """The blocks a change replaces: lines `first`..`old_last` of the old content (the same
    `first` in the new one, whose region ends at `old_last + delta`) and the new blocks
    there, numbered in the document; `words`: theirs (the work of indexing them)."""

    first: int
    old_last: int
    delta: int
    blocks: list[Block]
    words: int


def words(text: str) -> int:
    """Whitespace-separated words, counted without splitting (C loops, no allocation): the
    index's work grows with them."""
    if not text:
        return 0
    return text.count(" ") + text.count("\n") + text.count("\t") + 1


def plan_index(old: str | None, new: str) -> IndexPlan:
    """The region a change from `old` (None: a new document) to `new` re-indexes, as the
    stores find it from their stored blocks: the changed lines, widened over the non-blank
    lines that touch them (a block may merge with or split from its neighbours)."""
    if old is None:
        blocks = split_blocks(new)
        return IndexPlan(1, 0, new.count("\n") + 1, blocks, sum(words(b.text) for b in blocks))
    change = changed_lines(old, new)
    start, first = change.start, change.first
    while first > 1:  # the lines before the change are the same in both texts
        before = new.rfind("\n", 0, start - 1) + 1
        if not new[before : start - 1].strip():
            break
        first, start = first - 1, before
    end, extra = change.new_end, 0
    while end < len(new):  # so are the lines after it
        after = new.find("\n", end + 1)
        after = len(new) if after < 0 else after
        if not new[end + 1 : after].strip():
            break
        extra, end = extra + 1, after
    old_last = change.old_last + extra
    delta = change.new_last - change.old_last
    region = lines_between(new, change, first, old_last + delta)
    blocks = [Block(s + first - 1, e + first - 1, t) for s, e, t in split_blocks(region)]
    return IndexPlan(first, old_last, delta, blocks, sum(words(b.text) for b in blocks))


def check_index_work(path: str, plan: IndexPlan) -> None:
    """InvalidArgumentError when the write would index more than one write may."""
    blocks = len(plan.blocks)
    work = plan.words + BLOCK_WORK * blocks
    if work > MAX_INDEX_WORK:
        raise InvalidArgumentError(
            f"writing {path!r} would index {blocks} blocks of {plan.words} words at once "
            f"(work {work}: words + {BLOCK_WORK} a block); one write may do at most "
            f"{MAX_INDEX_WORK}, so that other writers never wait long behind it. Write a "
            "large document in parts: write the first part, then append the others"
        )


def check_write_work(path: str, old: str | None, new: str) -> None:
    """`check_index_work` for a store that does not keep the plan (the in-memory twin):
    cheap for a content that could not pass the bound whatever it replaces."""
    if words(new) + BLOCK_WORK * (new.count("\n") + 1) <= MAX_INDEX_WORK:
        return
    check_index_work(path, plan_index(old, new))
