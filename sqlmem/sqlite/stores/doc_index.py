"""The search blocks of the SQLite document store: written and moved (table
`document_blocks`, indexed by `document_blocks_fts` through triggers).

`write_blocks` brings a document's blocks from its old content's to its new one's with
only the blocks around the change replaced (`sqlmem.rules.doc_index_work.plan_index`):
one DELETE of the region's blocks, one UPDATE moving the blocks after it when the line
count changed, one INSERT per new block. The plan (the cut blocks and their CJK
segmentation) is normally made before the write lock is taken (`Prepared`); it is used
when the document is still at the revision it was made from, and made again here
otherwise. Either way a bounded write (`write`, `restore`, a file of `import_dir`) is
refused before anything is written when it would index more than one write may
(`check_index_work`), which bounds the work done under the write lock.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import apsw

from ...rules.doc_index_work import IndexPlan, check_index_work, plan_index
from ...rules.encoding import dumps_json
from ...search.query import segment
from . import docs_sql as sql

__all__ = [
    "SMALL",
    "Prepared",
    "prepare",
    "prepare_from",
    "row_for_write",
    "small_row",
    "write_blocks",
]

#: Documents up to this many UTF-8 bytes (stored and new) are changed with one read, all
#: under the write lock: cutting their blocks there takes well under a millisecond. Larger
#: ones are read and cut before the lock is taken, then written if still unchanged.
SMALL = 64 * 1024


class Prepared(NamedTuple):
    """A plan made outside the write lock, from the content of `revision` (0: none)."""

    revision: int
    plan: IndexPlan
    segments: list[str | None]


def prepare(path: str, revision: int, old: str | None, new: str, *, bounded: bool) -> Prepared:
    """Cut and segment the blocks a change from `old` to `new` re-indexes, and refuse a
    `bounded` one that would index more than one write may (both before the write lock)."""
    plan = plan_index(old, new)
    if bounded:
        check_index_work(path, plan)
    return Prepared(revision, plan, [segment(b.text) for b in plan.blocks])


def write_blocks(
    conn: apsw.Connection,
    path: str,
    pk: int,
    old: str | None,
    new: str,
    prepared: Prepared | None = None,
    *,
    bounded: bool,
) -> None:
    """Bring the document's blocks from `old`'s to `new`'s (`old` None: a new document),
    inside the caller's transaction. `prepared`: the plan for exactly this change, or
    None. `bounded`: refuse a change that would index more than one write may (edits and
    appends, which re-index only the blocks around them, and the JSON Lines import, a
    bulk operation in batches of its own, are not)."""
    if prepared is None:
        plan = plan_index(old, new)
        if bounded:
            check_index_work(path, plan)
        segments = [segment(b.text) for b in plan.blocks]
    else:
        plan, segments = prepared.plan, prepared.segments
    if old is not None:
        rows: list[Any] = conn.execute(
            sql.BLOCKS_AROUND, (pk, plan.old_last, plan.first)
        ).fetchall()
        if len(rows) == 1:  # the usual edit: one block (one statement, no json_each)
            conn.execute(sql.DELETE_BLOCK, (rows[0][0],))
        elif rows:
            conn.execute(sql.DELETE_BLOCKS, (dumps_json([bpk for bpk, _, _ in rows]),))
        if plan.delta:
            conn.execute(sql.SHIFT_BLOCKS, (plan.delta, pk, plan.old_last))
    values = [
        (pk, b.start_line, b.end_line, b.text, seg)
        for b, seg in zip(plan.blocks, segments, strict=True)
    ]
    if len(values) == 1:
        conn.execute(sql.INSERT_BLOCK, values[0])
    elif values:
        conn.executemany(sql.INSERT_BLOCK, values)


def small_row(conn: apsw.Connection, path: str) -> Any:
    """The SELECT_FOR_WRITE row with its content when it is at most SMALL bytes (else
    None in its place), or None when there is no document."""
    found: list[Any] = conn.execute(sql.SELECT_SMALL_FOR_WRITE, (path, SMALL)).fetchall()
    return found[0] if found else None


def prepare_from(path: str, seen: Any, content: str, *, bounded: bool) -> Prepared:
    """The blocks of a change from the `seen` row's content to `content`, cut now."""
    return prepare(
        path, seen[3] if seen else 0, seen[7] if seen else None, content, bounded=bounded
    )


def row_for_write(conn: apsw.Connection, path: str) -> Any:
    """The document's SELECT_FOR_WRITE row, or None when there is none."""
    found: list[Any] = conn.execute(sql.SELECT_FOR_WRITE, (path,)).fetchall()
    return found[0] if found else None
