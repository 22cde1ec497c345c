"""The frameworks' tables in the JSON Lines export and import (rules/export_blobs.py):
the key-value rows (migration kv) and LangGraph's checkpoints and pending writes
(migration checkpoints).

Export reads each table in pages by primary key, each page its own short read. Import is a
merge, idempotent like the rest of it: a kv row is written when the file's `updated_at` is
newer than the stored row's (or nothing live is stored), so an older export never rolls a
value back and a second import writes nothing; a checkpoint or a pending write already
stored under its key is left as it is (LangGraph never rewrites a checkpoint id).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import apsw

from ...rules.encoding import now_ms
from ...rules.export_blobs import CheckpointRecordRow, CheckpointWriteRow, KVRecordRow
from ...rules.export_format import ImportCounts
from ...rules.export_records import checkpoint_record, checkpoint_write_record, kv_record

if TYPE_CHECKING:
    from ..db import MemoryDB

__all__ = ["export_checkpoints", "export_kv", "import_blob_row"]

#: Rows per page: values may be large (a checkpoint holds a graph's whole state).
_PAGE = 200

_KV_PAGE = """
SELECT namespace, key, value, created_at, updated_at, ttl_ms, expires_at FROM kv
WHERE (namespace, key) > (?1, ?2) AND (expires_at IS NULL OR expires_at > ?3)
ORDER BY namespace, key LIMIT ?4
"""
_CHECKPOINTS_PAGE = """
SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type,
    checkpoint, metadata_type, metadata, run_id
FROM lg_checkpoints WHERE (thread_id, checkpoint_ns, checkpoint_id) > (?1, ?2, ?3)
ORDER BY thread_id, checkpoint_ns, checkpoint_id LIMIT ?4
"""
_WRITES_PAGE = """
SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value_type, value,
    task_path
FROM lg_writes
WHERE (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) > (?1, ?2, ?3, ?4, ?5)
ORDER BY thread_id, checkpoint_ns, checkpoint_id, task_id, idx LIMIT ?6
"""
# The first page starts at the smallest key ("" sorts first among texts), included.
_KV_FIRST = _KV_PAGE.replace(") > (", ") >= (")
_CHECKPOINTS_FIRST = _CHECKPOINTS_PAGE.replace(") > (", ") >= (")
_WRITES_FIRST = _WRITES_PAGE.replace(") > (", ") >= (")
_IMPORT_KV = """
INSERT INTO kv(namespace, key, value, created_at, updated_at, ttl_ms, expires_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT(namespace, key) DO UPDATE SET
    value = excluded.value, created_at = excluded.created_at,
    updated_at = excluded.updated_at, ttl_ms = excluded.ttl_ms,
    expires_at = excluded.expires_at
WHERE excluded.updated_at > kv.updated_at OR kv.expires_at <= ?8
"""
_IMPORT_CHECKPOINT = """
INSERT OR IGNORE INTO lg_checkpoints(thread_id, checkpoint_ns, checkpoint_id,
    parent_checkpoint_id, checkpoint_type, checkpoint, metadata_type, metadata, run_id)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
"""
_IMPORT_WRITE = """
INSERT OR IGNORE INTO lg_writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
    channel, value_type, value, task_path)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
"""


def export_kv(db: MemoryDB) -> Iterator[dict[str, Any]]:
    """Every live kv row, in (namespace, key) order."""
    after: tuple[str, str] = ("", "")
    first = True
    while True:
        with db.engine.read() as conn:
            rows: list[Any] = conn.execute(
                _KV_FIRST if first else _KV_PAGE,
                (*after, now_ms(), _PAGE),
            ).fetchall()
        for row in rows:
            yield kv_record(*row)
        if len(rows) < _PAGE:
            return
        after, first = (rows[-1][0], rows[-1][1]), False


def export_checkpoints(db: MemoryDB) -> Iterator[dict[str, Any]]:
    """Every checkpoint, then every pending write, in primary-key order."""
    after: tuple[Any, ...] = ("", "", "")
    first = True
    while True:
        with db.engine.read() as conn:
            rows: list[Any] = conn.execute(
                _CHECKPOINTS_FIRST if first else _CHECKPOINTS_PAGE, (*after, _PAGE)
            ).fetchall()
        for row in rows:
            yield checkpoint_record(row)
        if len(rows) < _PAGE:
            break
        after, first = tuple(rows[-1][:3]), False
    yield from _export_writes(db)


def _export_writes(db: MemoryDB) -> Iterator[dict[str, Any]]:
    after: tuple[Any, ...] = ("", "", "", "", -(2**63))
    first = True
    while True:
        with db.engine.read() as conn:
            rows: list[Any] = conn.execute(
                _WRITES_FIRST if first else _WRITES_PAGE, (*after, _PAGE)
            ).fetchall()
        for row in rows:
            yield checkpoint_write_record(row)
        if len(rows) < _PAGE:
            return
        after, first = tuple(rows[-1][:5]), False


def import_blob_row(
    conn: apsw.Connection,
    row: KVRecordRow | CheckpointRecordRow | CheckpointWriteRow,
    now: int,
    counts: ImportCounts,
) -> None:
    """Store one record inside the import's transaction (see the module docstring)."""
    if isinstance(row, KVRecordRow):
        if row.expires_ms is not None and row.expires_ms <= now:
            counts.kv_skipped += 1  # expired since the export: every read would skip it
            return
        conn.execute(
            _IMPORT_KV,
            (row.namespace, row.key, row.value, row.created_ms, row.updated_ms, row.ttl_ms,
             row.expires_ms, now),
        )  # fmt: skip
        if conn.changes():
            counts.kv += 1
        else:
            counts.kv_skipped += 1
    elif isinstance(row, CheckpointRecordRow):
        conn.execute(
            _IMPORT_CHECKPOINT,
            (row.thread_id, row.checkpoint_ns, row.checkpoint_id, row.parent_checkpoint_id,
             row.checkpoint_type, row.checkpoint, row.metadata_type, row.metadata,
             row.run_id),
        )  # fmt: skip
        if conn.changes():
            counts.checkpoints += 1
        else:
            counts.checkpoints_skipped += 1
    else:
        conn.execute(
            _IMPORT_WRITE,
            (row.thread_id, row.checkpoint_ns, row.checkpoint_id, row.task_id, row.idx,
             row.channel, row.value_type, row.value, row.task_path),
        )  # fmt: skip
        if conn.changes():
            counts.checkpoint_writes += 1
        else:
            counts.checkpoint_writes_skipped += 1
