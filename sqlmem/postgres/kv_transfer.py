"""The frameworks' records of one agent in the JSON Lines export and import
(rules/export_blobs.py), on PostgreSQL: key-value rows, LangGraph checkpoints and their
pending writes (tables of migrations/postgres/NNNN_framework_records.sql).

The SQLite file's merge (`sqlmem.sqlite.transfer.kv_transfer`): a kv row is written when the file's
`updated_at` is newer than the stored row's (or nothing live is stored), so an older
export never rolls a value back and a second import writes nothing; a checkpoint or a
pending write already stored under its key is left as it is. Export reads each table in
pages by key, each page its own short read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..rules.encoding import now_ms
from ..rules.export_blobs import CheckpointRecordRow, CheckpointWriteRow, KVRecordRow
from ..rules.export_format import ImportCounts
from ..rules.export_records import checkpoint_record, checkpoint_write_record, kv_record
from .codec import decode, encode
from .engine import Conn

if TYPE_CHECKING:
    from . import PostgresDB

__all__ = ["export_framework_records", "import_framework_row"]

_PAGE = 200

_KV_PAGE = """SELECT namespace, key, value, created_at, updated_at, ttl_ms, expires_at, ns_hash,
    key_hash
FROM kv WHERE agent_id = %s AND (ns_hash, key_hash) > (%s, %s)
  AND (expires_at IS NULL OR expires_at > %s)
ORDER BY ns_hash, key_hash LIMIT %s"""
_CHECKPOINTS_PAGE = """SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
    checkpoint_type, checkpoint, metadata_type, metadata, run_id
FROM lg_checkpoints WHERE agent_id = %s AND (thread_id, checkpoint_ns, checkpoint_id) > (%s, %s, %s)
ORDER BY thread_id, checkpoint_ns, checkpoint_id LIMIT %s"""
_WRITES_PAGE = """SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel,
    value_type, value, task_path
FROM lg_writes WHERE agent_id = %s
  AND (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) > (%s, %s, %s, %s, %s)
ORDER BY thread_id, checkpoint_ns, checkpoint_id, task_id, idx LIMIT %s"""
_IMPORT_KV = """INSERT INTO kv (agent_id, ns_hash, key_hash, namespace, key, value, created_at,
    updated_at, ttl_ms, expires_at)
VALUES (%(agent)s, %(nsh)s, %(kh)s, %(ns)s, %(key)s, %(value)s, %(created)s, %(updated)s,
    %(ttl)s, %(expires)s)
ON CONFLICT (agent_id, ns_hash, key_hash) DO UPDATE SET value = excluded.value,
    created_at = excluded.created_at, updated_at = excluded.updated_at,
    ttl_ms = excluded.ttl_ms, expires_at = excluded.expires_at
WHERE excluded.updated_at > kv.updated_at OR kv.expires_at <= %(now)s"""
_IMPORT_CHECKPOINT = """INSERT INTO lg_checkpoints (agent_id, thread_id, checkpoint_ns,
    checkpoint_id, parent_checkpoint_id, checkpoint_type, checkpoint, metadata_type,
    metadata, run_id)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"""
_IMPORT_WRITE = """INSERT INTO lg_writes (agent_id, thread_id, checkpoint_ns, checkpoint_id,
    task_id, idx, channel, value_type, value, task_path)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"""


def _b(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")


def _t(data: Any) -> Any:
    return None if data is None else bytes(data).decode("utf-8")


def export_framework_records(db: PostgresDB) -> Iterator[dict[str, Any]]:
    """Every live kv row, every checkpoint, then every pending write of the agent."""
    yield from _kv(db)
    yield from _checkpoints(db)
    yield from _writes(db)


def _pages(db: PostgresDB, statement: str, start: tuple[Any, ...], key: Any) -> Iterator[Any]:
    """The rows of a keyset-paged statement, page by page (`key(row)`: the next start)."""
    after = start
    while True:
        with db._engine.read() as conn:
            rows = conn.execute(statement, (db.agent_id, *after, _PAGE)).fetchall()
        yield from rows
        if len(rows) < _PAGE:
            return
        after = key(rows[-1])


def _kv(db: PostgresDB) -> Iterator[dict[str, Any]]:
    now = now_ms()
    after: tuple[Any, ...] = (b"", b"")
    while True:
        with db._engine.read() as conn:
            rows = conn.execute(_KV_PAGE, (db.agent_id, *after, now, _PAGE)).fetchall()
        for ns, key, value, created, updated, ttl, expires, _, _ in rows:
            yield kv_record(_t(ns), _t(key), bytes(value), created, updated, ttl, expires)
        if len(rows) < _PAGE:
            return
        after = (bytes(rows[-1][7]), bytes(rows[-1][8]))


def _checkpoints(db: PostgresDB) -> Iterator[dict[str, Any]]:
    def key(row: Any) -> tuple[Any, ...]:
        return (bytes(row[0]), bytes(row[1]), bytes(row[2]))

    for row in _pages(db, _CHECKPOINTS_PAGE, (b"", b"", b""), key):
        yield checkpoint_record(
            (*map(_t, row[:4]), decode(row[4]), bytes(row[5]), decode(row[6]), bytes(row[7]),
             _t(row[8]))
        )  # fmt: skip


def _writes(db: PostgresDB) -> Iterator[dict[str, Any]]:
    def key(row: Any) -> tuple[Any, ...]:
        return (bytes(row[0]), bytes(row[1]), bytes(row[2]), bytes(row[3]), row[4])

    for row in _pages(db, _WRITES_PAGE, (b"", b"", b"", b"", -(2**31)), key):
        yield checkpoint_write_record(
            (*map(_t, row[:4]), row[4], _t(row[5]), decode(row[6]), bytes(row[7]), _t(row[8]))
        )


def import_framework_row(
    conn: Conn,
    agent: str,
    row: KVRecordRow | CheckpointRecordRow | CheckpointWriteRow,
    now: int,
    counts: ImportCounts,
) -> None:
    """Store one record inside the import's transaction (see the module docstring)."""
    if isinstance(row, KVRecordRow):
        if row.expires_ms is not None and row.expires_ms <= now:
            counts.kv_skipped += 1  # expired since the export: every read would skip it
            return
        args = {
            "agent": agent,
            "nsh": hashlib.sha256(row.namespace.encode("utf-8")).digest(),
            "kh": hashlib.sha256(row.key.encode("utf-8")).digest(),
            "ns": _b(row.namespace),
            "key": _b(row.key),
            "value": row.value,
            "created": row.created_ms,
            "updated": row.updated_ms,
            "ttl": row.ttl_ms,
            "expires": row.expires_ms,
            "now": now,
        }
        stored = conn.execute(_IMPORT_KV, args).rowcount
        counts.kv, counts.kv_skipped = counts.kv + stored, counts.kv_skipped + (not stored)
    elif isinstance(row, CheckpointRecordRow):
        values = (
            agent, _b(row.thread_id), _b(row.checkpoint_ns), _b(row.checkpoint_id),
            _b(row.parent_checkpoint_id), encode(row.checkpoint_type), row.checkpoint,
            encode(row.metadata_type), row.metadata, _b(row.run_id),
        )  # fmt: skip
        stored = conn.execute(_IMPORT_CHECKPOINT, values).rowcount
        counts.checkpoints += stored
        counts.checkpoints_skipped += not stored
    else:
        write: tuple[Any, ...] = (
            agent, _b(row.thread_id), _b(row.checkpoint_ns), _b(row.checkpoint_id),
            _b(row.task_id), row.idx, _b(row.channel), encode(row.value_type), row.value,
            _b(row.task_path),
        )  # fmt: skip
        stored = conn.execute(_IMPORT_WRITE, write).rowcount
        counts.checkpoint_writes += stored
        counts.checkpoint_writes_skipped += not stored
