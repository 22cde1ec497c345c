"""LangGraph's checkpoints and pending writes in the agent's memory file.

Storage model (migrations/0008_checkpoints.sql): `lg_checkpoints` keyed (thread_id,
checkpoint_ns, checkpoint_id), `lg_writes` keyed (thread_id, checkpoint_ns, checkpoint_id,
task_id, idx). This module knows bytes and type tags only: the adapter
(`sqlmem.adapters.langgraph_saver`) serialises with LangGraph's serde, so the backend
imports no framework.

Every write is one transaction (a checkpoint, a batch of writes, a thread's deletion or
copy). Searches page through the primary key backwards, one snapshot per page, so a long
history never sits in memory at once and no read holds a connection between pages.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ...rules.checkpoint_checks import (
    check_search,
    check_strategy,
)
from ...rules.checkpoint_checks import (
    checked_key as _checked_key,
)
from ...rules.checkpoint_checks import (
    texts as _texts,
)
from ...rules.checks import check_text
from ...rules.encoding import dumps_json
from ...rules.framework_rows import CheckpointRow, WriteRow
from ..core.engine import Engine

__all__ = ["CheckpointRow", "SQLiteCheckpointStore", "WriteRow"]

_PUT = """
INSERT OR REPLACE INTO lg_checkpoints(thread_id, checkpoint_ns, checkpoint_id,
    parent_checkpoint_id, checkpoint_type, checkpoint, metadata_type, metadata, run_id)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
"""
# Regular writes are kept as first written (a task's retry repeats them); the special
# channels (negative idx) take the latest value, as langgraph-checkpoint-sqlite does.
_PUT_WRITE_KEEP = """
INSERT OR IGNORE INTO lg_writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
    channel, value_type, value, task_path)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
"""
_PUT_WRITE_REPLACE = _PUT_WRITE_KEEP.replace("OR IGNORE", "OR REPLACE")
_COLUMNS = """thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
    checkpoint_type, checkpoint, metadata_type, metadata"""
_GET_ONE = f"""
SELECT {_COLUMNS} FROM lg_checkpoints
WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3
"""
# The values come in through scalar subqueries. Bound straight into the index equality
# of a statement that walks the index for its ORDER BY, they cost SQLite (3.54, apsw's)
# as much as a re-prepare per call (literals, or values behind a subquery, do not):
# 11.4 us per get_tuple's SQL, against 6.5 us this way, with the same plan (the
# primary key backwards, no sorter: test_latest_checkpoint_is_read_from_the_index).
_GET_LATEST = f"""
SELECT {_COLUMNS} FROM lg_checkpoints
WHERE thread_id = (SELECT ?1) AND checkpoint_ns = (SELECT ?2)
ORDER BY checkpoint_id DESC LIMIT 1
"""
# One page of a search, newest first: NULL arguments leave their condition out; ?5..?7
# is the last row of the previous page (keyset paging on the sort key).
_SEARCH = f"""
SELECT {_COLUMNS} FROM lg_checkpoints
WHERE (?1 IS NULL OR thread_id = ?1) AND (?2 IS NULL OR checkpoint_ns = ?2)
  AND (?3 IS NULL OR checkpoint_id = ?3) AND (?4 IS NULL OR checkpoint_id < ?4)
  AND (?5 IS NULL OR (checkpoint_id, thread_id, checkpoint_ns) < (?5, ?6, ?7))
ORDER BY checkpoint_id DESC, thread_id DESC, checkpoint_ns DESC
LIMIT ?8
"""
# Sorted by LangGraph's writes_sort_key (task_path, task_id, idx) in Python: an ORDER BY
# here costs a sorter per read (~3.5 us, a third of a get_tuple), for a handful of rows.
_WRITES = """
SELECT task_path, task_id, idx, channel, value_type, value FROM lg_writes
WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3
"""
_DELETE_THREAD_CHECKPOINTS = "DELETE FROM lg_checkpoints WHERE thread_id = ?1"
_DELETE_THREAD_WRITES = "DELETE FROM lg_writes WHERE thread_id = ?1"
_DELETE_RUNS_WRITES = """
DELETE FROM lg_writes WHERE (thread_id, checkpoint_ns, checkpoint_id) IN (
        SELECT thread_id, checkpoint_ns, checkpoint_id FROM lg_checkpoints
        WHERE run_id IN (SELECT value FROM json_each(?1)))"""
_DELETE_RUNS_CHECKPOINTS = (
    "DELETE FROM lg_checkpoints WHERE run_id IN (SELECT value FROM json_each(?1))"
)
_COPY_THREAD_CHECKPOINTS = """
INSERT OR REPLACE INTO lg_checkpoints(thread_id, checkpoint_ns, checkpoint_id,
        parent_checkpoint_id, checkpoint_type, checkpoint, metadata_type, metadata, run_id)
    SELECT ?2, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type,
        checkpoint, metadata_type, metadata, run_id
    FROM lg_checkpoints WHERE thread_id = ?1"""
_COPY_THREAD_WRITES = """
INSERT OR REPLACE INTO lg_writes(thread_id, checkpoint_ns, checkpoint_id, task_id,
        idx, channel, value_type, value, task_path)
    SELECT ?2, checkpoint_ns, checkpoint_id, task_id, idx, channel, value_type, value,
        task_path
    FROM lg_writes WHERE thread_id = ?1"""
# keep_latest: every checkpoint but the newest of its (thread, namespace) goes, with its
# writes; the newest keeps its own.
_PRUNE_KEEP_LATEST_WRITES = """
DELETE FROM lg_writes WHERE thread_id = ?1 AND checkpoint_id < (
        SELECT max(c.checkpoint_id) FROM lg_checkpoints c
        WHERE c.thread_id = ?1 AND c.checkpoint_ns = lg_writes.checkpoint_ns)"""
_PRUNE_KEEP_LATEST_CHECKPOINTS = """
DELETE FROM lg_checkpoints WHERE thread_id = ?1 AND checkpoint_id < (
        SELECT max(c.checkpoint_id) FROM lg_checkpoints c
        WHERE c.thread_id = ?1 AND c.checkpoint_ns = lg_checkpoints.checkpoint_ns)"""

#: Checkpoints read per snapshot by `search`.
SEARCH_PAGE = 100


class SQLiteCheckpointStore:
    """Checkpoints and pending writes by thread and namespace in one database;
    thread-safe."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def put(
        self,
        key: tuple[str, str, str],
        parent_id: str | None,
        checkpoint: tuple[str, bytes],
        metadata: tuple[str, bytes],
        run_id: str | None,
    ) -> None:
        """Store one checkpoint (replacing one with the same key), one transaction."""
        thread_id, ns, checkpoint_id = _checked_key(key)
        args = (thread_id, ns, checkpoint_id, parent_id, *checkpoint, *metadata, run_id)
        with self._engine.write() as conn:
            conn.execute(_PUT, args)

    def put_writes(
        self,
        key: tuple[str, str, str],
        writes: Sequence[tuple[str, int, str, str, bytes]],
        task_path: str,
        *,
        replace: bool,
    ) -> None:
        """Store (task_id, idx, channel, type, bytes) writes of one checkpoint in one
        transaction; `replace`: later values win over stored ones (special channels)."""
        thread_id, ns, checkpoint_id = _checked_key(key)
        rows = [
            (thread_id, ns, checkpoint_id, task_id, idx, channel, vtype, value, task_path)
            for task_id, idx, channel, vtype, value in writes
        ]
        if rows:
            with self._engine.write() as conn:
                conn.executemany(_PUT_WRITE_REPLACE if replace else _PUT_WRITE_KEEP, rows)

    def get(self, thread_id: str, ns: str, checkpoint_id: str | None) -> CheckpointRow | None:
        """One checkpoint (the latest of the thread's namespace when no id is given)."""
        check_text(thread_id, "thread_id")
        check_text(ns, "checkpoint_ns")
        if checkpoint_id is not None:
            check_text(checkpoint_id, "checkpoint_id")
        # One snapshot (a savepoint: it nests inside the caller's write transaction), so
        # a concurrent put_writes never shows half; measured cheaper than two autocommit
        # reads, and than one statement asking EXISTS(writes) to skip the second.
        with self._engine.read() as conn, conn:
            if checkpoint_id is None:
                row = conn.execute(_GET_LATEST, (thread_id, ns)).fetchone()
            else:
                row = conn.execute(_GET_ONE, (thread_id, ns, checkpoint_id)).fetchone()
            found = None if row is None else _row(conn, row)
        return found

    def search(
        self,
        thread_id: str | None,
        ns: str | None,
        checkpoint_id: str | None,
        before: str | None,
    ) -> Iterator[CheckpointRow]:
        """Matching checkpoints, newest first (None: no condition), lazily by pages."""
        check_search(thread_id, ns, checkpoint_id, before)
        return self._search((thread_id, ns, checkpoint_id, before))

    def _search(self, where: tuple[str | None, ...]) -> Iterator[CheckpointRow]:
        after: tuple[Any, Any, Any] = (None, None, None)
        while True:
            with self._engine.read() as conn, conn:  # one snapshot per page
                rows = conn.execute(_SEARCH, (*where, *after, SEARCH_PAGE)).fetchall()
                page = [_row(conn, row) for row in rows]
            yield from page
            if len(page) < SEARCH_PAGE:
                return
            last = page[-1]
            after = (last.checkpoint_id, last.thread_id, last.checkpoint_ns)

    def delete_thread(self, thread_id: str) -> None:
        """Every checkpoint and write of the thread (all namespaces), one transaction."""
        check_text(thread_id, "thread_id")
        with self._engine.write() as conn:
            conn.execute(_DELETE_THREAD_CHECKPOINTS, (thread_id,))
            conn.execute(_DELETE_THREAD_WRITES, (thread_id,))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Every checkpoint whose metadata names one of the runs, with its writes."""
        wanted = _texts(run_ids, "run_ids")
        if wanted:
            with self._engine.write() as conn:
                conn.execute(_DELETE_RUNS_WRITES, (dumps_json(wanted),))
                conn.execute(_DELETE_RUNS_CHECKPOINTS, (dumps_json(wanted),))

    def copy_thread(self, source: str, target: str) -> None:
        """Every checkpoint and write of `source` into `target` (same ids; rows the
        target already has under those ids are replaced), one transaction."""
        check_text(source, "source_thread_id")
        check_text(target, "target_thread_id")
        if source == target:
            return
        with self._engine.write() as conn:
            conn.execute(_COPY_THREAD_CHECKPOINTS, (source, target))
            conn.execute(_COPY_THREAD_WRITES, (source, target))

    def prune(self, thread_ids: Sequence[str], strategy: str) -> None:
        """`keep_latest`: the newest checkpoint of each namespace stays; `delete`: all go.
        One transaction for all the threads."""
        wanted = _texts(thread_ids, "thread_ids")
        check_strategy(strategy)
        with self._engine.write() as conn:
            for thread_id in wanted:
                if strategy == "delete":
                    conn.execute(_DELETE_THREAD_CHECKPOINTS, (thread_id,))
                    conn.execute(_DELETE_THREAD_WRITES, (thread_id,))
                else:
                    conn.execute(_PRUNE_KEEP_LATEST_WRITES, (thread_id,))
                    conn.execute(_PRUNE_KEEP_LATEST_CHECKPOINTS, (thread_id,))


def _row(conn: Any, row: Sequence[Any]) -> CheckpointRow:
    """The checkpoint of a row, with its pending writes read on `conn`."""
    found = conn.execute(_WRITES, (row[0], row[1], row[2])).fetchall()
    if len(found) > 1:
        found.sort(key=lambda w: (w[0], w[1], w[2]))  # str order is SQLite's (code points)
    writes: list[WriteRow] = [(w[1], w[3], w[4], w[5]) for w in found]
    return CheckpointRow(
        row[0],
        row[1],
        row[2],
        row[3],
        (row[4], row[5]),
        (row[6], row[7]),
        writes,
    )
