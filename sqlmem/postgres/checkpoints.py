"""LangGraph's checkpoints and pending writes of one agent on PostgreSQL (tables
`lg_checkpoints`, `lg_writes`, migrations/postgres/NNNN_framework_records.sql): the
checkpoint port of `sqlmem.adapters.ports`, with the SQLite file's semantics.

Ids are stored as UTF-8 bytes (byte order is code point order, so "latest" and "before"
compare as on SQLite). Every statement names the agent; every write is one transaction;
a search pages backwards through the rows, one snapshot per page, so a long history never
sits in memory at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..rules.checkpoint_checks import check_search, check_strategy, checked_key, texts
from ..rules.checks import check_text
from ..rules.framework_rows import CheckpointRow, WriteRow
from .codec import decode, encode
from .engine import Conn, Engine

__all__ = ["PostgresCheckpointStore"]

_KEY = "agent_id = %(agent)s AND thread_id = %(thread)s"
_COLUMNS = """thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
    checkpoint_type, checkpoint, metadata_type, metadata"""
_PUT = """INSERT INTO lg_checkpoints (agent_id, thread_id, checkpoint_ns, checkpoint_id,
    parent_checkpoint_id, checkpoint_type, checkpoint, metadata_type, metadata, run_id)
VALUES (%(agent)s, %(thread)s, %(ns)s, %(id)s, %(parent)s, %(ctype)s, %(checkpoint)s,
    %(mtype)s, %(metadata)s, %(run)s)
ON CONFLICT (agent_id, thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
    parent_checkpoint_id = excluded.parent_checkpoint_id,
    checkpoint_type = excluded.checkpoint_type, checkpoint = excluded.checkpoint,
    metadata_type = excluded.metadata_type, metadata = excluded.metadata,
    run_id = excluded.run_id"""
# Regular writes are kept as first written (a task's retry repeats them); the special
# channels take the latest value.
_PUT_WRITE = """INSERT INTO lg_writes (agent_id, thread_id, checkpoint_ns, checkpoint_id,
    task_id, idx, channel, value_type, value, task_path)
VALUES (%(agent)s, %(thread)s, %(ns)s, %(id)s, %(task)s, %(idx)s, %(channel)s, %(vtype)s,
    %(value)s, %(path)s)
ON CONFLICT (agent_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx) """
_PUT_WRITE_KEEP = _PUT_WRITE + "DO NOTHING"
_PUT_WRITE_REPLACE = (
    _PUT_WRITE
    + """DO UPDATE SET channel = excluded.channel, value_type = excluded.value_type,
    value = excluded.value, task_path = excluded.task_path"""
)
_GET_ONE = f"""SELECT {_COLUMNS} FROM lg_checkpoints
WHERE {_KEY} AND checkpoint_ns = %(ns)s AND checkpoint_id = %(id)s"""
_GET_LATEST = f"""SELECT {_COLUMNS} FROM lg_checkpoints
WHERE {_KEY} AND checkpoint_ns = %(ns)s ORDER BY checkpoint_id DESC LIMIT 1"""
_SEARCH = f"""SELECT {_COLUMNS} FROM lg_checkpoints
WHERE agent_id = %(agent)s
  AND (%(thread)s::bytea IS NULL OR thread_id = %(thread)s::bytea)
  AND (%(ns)s::bytea IS NULL OR checkpoint_ns = %(ns)s::bytea)
  AND (%(id)s::bytea IS NULL OR checkpoint_id = %(id)s::bytea)
  AND (%(before)s::bytea IS NULL OR checkpoint_id < %(before)s::bytea)
  AND (%(a_id)s::bytea IS NULL OR (checkpoint_id, thread_id, checkpoint_ns)
      < (%(a_id)s::bytea, %(a_thread)s::bytea, %(a_ns)s::bytea))
ORDER BY checkpoint_id DESC, thread_id DESC, checkpoint_ns DESC
LIMIT %(limit)s"""
_WRITES = """SELECT task_path, task_id, idx, channel, value_type, value FROM lg_writes
WHERE agent_id = %(agent)s AND thread_id = %(thread)s AND checkpoint_ns = %(ns)s
  AND checkpoint_id = %(id)s"""
_DELETE_THREAD_CHECKPOINTS = f"DELETE FROM lg_checkpoints WHERE {_KEY}"
_DELETE_THREAD_WRITES = f"DELETE FROM lg_writes WHERE {_KEY}"
_DELETE_RUNS_WRITES = """DELETE FROM lg_writes AS w USING lg_checkpoints AS c
    WHERE w.agent_id = %(agent)s AND c.agent_id = %(agent)s AND c.run_id = ANY(%(runs)s)
      AND w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns
      AND w.checkpoint_id = c.checkpoint_id"""
_DELETE_RUNS_CHECKPOINTS = (
    "DELETE FROM lg_checkpoints WHERE agent_id = %(agent)s AND run_id = ANY(%(runs)s)"
)
_COPY_THREAD_CHECKPOINTS = f"""INSERT INTO lg_checkpoints (agent_id, thread_id,
        checkpoint_ns, checkpoint_id,
        parent_checkpoint_id, checkpoint_type, checkpoint, metadata_type, metadata, run_id)
    SELECT agent_id, %(target)s, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
        checkpoint_type, checkpoint, metadata_type, metadata, run_id
    FROM lg_checkpoints WHERE {_KEY}
    ON CONFLICT (agent_id, thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
        parent_checkpoint_id = excluded.parent_checkpoint_id,
        checkpoint_type = excluded.checkpoint_type, checkpoint = excluded.checkpoint,
        metadata_type = excluded.metadata_type, metadata = excluded.metadata,
        run_id = excluded.run_id"""
_COPY_THREAD_WRITES = f"""INSERT INTO lg_writes (agent_id, thread_id, checkpoint_ns,
        checkpoint_id, task_id,
        idx, channel, value_type, value, task_path)
    SELECT agent_id, %(target)s, checkpoint_ns, checkpoint_id, task_id, idx, channel,
        value_type, value, task_path
    FROM lg_writes WHERE {_KEY}
    ON CONFLICT (agent_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
    DO UPDATE SET channel = excluded.channel, value_type = excluded.value_type,
        value = excluded.value, task_path = excluded.task_path"""
# keep_latest: every checkpoint but the newest of its (thread, namespace) goes, with its
# writes; the newest keeps its own.
_PRUNE_WRITES = """DELETE FROM lg_writes
WHERE agent_id = %(agent)s AND thread_id = %(thread)s AND checkpoint_id < (
    SELECT c.checkpoint_id FROM lg_checkpoints AS c
    WHERE c.agent_id = %(agent)s AND c.thread_id = %(thread)s
      AND c.checkpoint_ns = lg_writes.checkpoint_ns
    ORDER BY c.checkpoint_id DESC LIMIT 1)"""
_PRUNE_CHECKPOINTS = """DELETE FROM lg_checkpoints
WHERE agent_id = %(agent)s AND thread_id = %(thread)s AND checkpoint_id < (
    SELECT c.checkpoint_id FROM lg_checkpoints AS c
    WHERE c.agent_id = %(agent)s AND c.thread_id = %(thread)s
      AND c.checkpoint_ns = lg_checkpoints.checkpoint_ns
    ORDER BY c.checkpoint_id DESC LIMIT 1)"""

#: Checkpoints read per snapshot by `search`.
SEARCH_PAGE = 100


def _b(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")


def _text(data: Any) -> str:
    return bytes(data).decode("utf-8")


class PostgresCheckpointStore:
    """Checkpoints and pending writes of one agent; thread-safe."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def _key(self, thread_id: str, ns: str | None = None, cid: str | None = None) -> dict[str, Any]:
        return {
            "agent": self._engine.agent_id,
            "thread": _b(thread_id),
            "ns": _b(ns),
            "id": _b(cid),
        }

    def put(
        self,
        key: tuple[str, str, str],
        parent_id: str | None,
        checkpoint: tuple[str, bytes],
        metadata: tuple[str, bytes],
        run_id: str | None,
    ) -> None:
        args = {
            **self._key(*checked_key(key)),
            "parent": _b(parent_id),
            "ctype": encode(checkpoint[0]),
            "checkpoint": bytes(checkpoint[1]),
            "mtype": encode(metadata[0]),
            "metadata": bytes(metadata[1]),
            "run": _b(run_id),
        }
        with self._engine.write_one() as conn:
            conn.execute(_PUT, args)

    def put_writes(
        self,
        key: tuple[str, str, str],
        writes: Sequence[tuple[str, int, str, str, bytes]],
        task_path: str,
        *,
        replace: bool,
    ) -> None:
        base = {**self._key(*checked_key(key)), "path": _b(task_path)}
        rows = [
            {
                **base,
                "task": _b(task_id),
                "idx": idx,
                "channel": _b(channel),
                "vtype": encode(vtype),
                "value": bytes(value),
            }
            for task_id, idx, channel, vtype, value in writes
        ]
        if rows:
            with self._engine.write() as conn, conn.cursor() as cursor:
                cursor.executemany(_PUT_WRITE_REPLACE if replace else _PUT_WRITE_KEEP, rows)

    def get(self, thread_id: str, ns: str, checkpoint_id: str | None) -> CheckpointRow | None:
        check_text(thread_id, "thread_id")
        check_text(ns, "checkpoint_ns")
        if checkpoint_id is not None:
            check_text(checkpoint_id, "checkpoint_id")
        args = self._key(thread_id, ns, checkpoint_id)
        with self._engine.snapshot() as conn:  # the checkpoint and its writes agree
            row = conn.execute(_GET_LATEST if checkpoint_id is None else _GET_ONE, args).fetchone()
            return None if row is None else self._row(conn, row)

    def search(
        self,
        thread_id: str | None,
        ns: str | None,
        checkpoint_id: str | None,
        before: str | None,
    ) -> Iterator[CheckpointRow]:
        check_search(thread_id, ns, checkpoint_id, before)
        where = {
            "agent": self._engine.agent_id,
            "thread": _b(thread_id),
            "ns": _b(ns),
            "id": _b(checkpoint_id),
            "before": _b(before),
            "limit": SEARCH_PAGE,
        }
        return self._search(where)

    def _search(self, where: dict[str, Any]) -> Iterator[CheckpointRow]:
        after: dict[str, Any] = {"a_id": None, "a_thread": None, "a_ns": None}
        while True:
            with self._engine.snapshot() as conn:  # one snapshot per page
                rows = conn.execute(_SEARCH, {**where, **after}).fetchall()
                page = [self._row(conn, row) for row in rows]
            yield from page
            if len(page) < SEARCH_PAGE:
                return
            last = rows[-1]
            after = {"a_id": bytes(last[2]), "a_thread": bytes(last[0]), "a_ns": bytes(last[1])}

    def delete_thread(self, thread_id: str) -> None:
        check_text(thread_id, "thread_id")
        with self._engine.write() as conn:
            conn.execute(_DELETE_THREAD_CHECKPOINTS, self._key(thread_id))
            conn.execute(_DELETE_THREAD_WRITES, self._key(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        wanted = texts(run_ids, "run_ids")
        if wanted:
            args = {"agent": self._engine.agent_id, "runs": [_b(run) for run in wanted]}
            with self._engine.write() as conn:
                conn.execute(_DELETE_RUNS_WRITES, args)
                conn.execute(_DELETE_RUNS_CHECKPOINTS, args)

    def copy_thread(self, source: str, target: str) -> None:
        check_text(source, "source_thread_id")
        check_text(target, "target_thread_id")
        if source != target:
            args = {**self._key(source), "target": _b(target)}
            with self._engine.write() as conn:
                conn.execute(_COPY_THREAD_CHECKPOINTS, args)
                conn.execute(_COPY_THREAD_WRITES, args)

    def prune(self, thread_ids: Sequence[str], strategy: str) -> None:
        wanted = texts(thread_ids, "thread_ids")
        check_strategy(strategy)
        delete = strategy == "delete"
        with self._engine.write() as conn:
            for thread_id in wanted:
                args = self._key(thread_id)
                conn.execute(_DELETE_THREAD_WRITES if delete else _PRUNE_WRITES, args)
                conn.execute(_DELETE_THREAD_CHECKPOINTS if delete else _PRUNE_CHECKPOINTS, args)

    def _row(self, conn: Conn, row: Sequence[Any]) -> CheckpointRow:
        """The checkpoint of a row, with its pending writes read on `conn`."""
        args = {"agent": self._engine.agent_id, "thread": row[0], "ns": row[1], "id": row[2]}
        found = [
            (_text(w[0]), _text(w[1]), int(w[2]), _text(w[3]), decode(w[4]), bytes(w[5]))
            for w in conn.execute(_WRITES, args).fetchall()
        ]
        found.sort(key=lambda w: (w[0], w[1], w[2]))
        writes: list[WriteRow] = [(w[1], w[3], w[4], w[5]) for w in found]
        return CheckpointRow(
            _text(row[0]),
            _text(row[1]),
            _text(row[2]),
            None if row[3] is None else _text(row[3]),
            (decode(row[4]), bytes(row[5])),
            (decode(row[6]), bytes(row[7])),
            writes,
        )
