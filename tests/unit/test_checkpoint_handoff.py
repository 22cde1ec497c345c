"""The writer's PASSIVE checkpoints run after its write lock is released (issue 22, W6).

Run inside the commit's WAL hook, a checkpoint (page copies, fsyncs: tens of ms on a
busy machine) held every other writer of the process; SQLite's own auto-checkpoint runs
after the write lock is let go. The hook now only marks one due (`passive_due`) and the
engine runs it on a reader connection when the write call leaves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import apsw

import sqlmem
from sqlmem import Message
from sqlmem.sqlite.core.connection import AUTOCHECKPOINT_PAGES
from sqlmem.sqlite.core.engine import Engine

OpenDB = Callable[..., sqlmem.MemoryDB]


def _wal_frames(db: sqlmem.MemoryDB) -> tuple[int, int]:
    """(frames in the WAL, frames already copied into the file), from a new connection."""
    conn = apsw.Connection(str(db._engine.path))
    try:
        row: tuple[int, int, int] = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0]  # type: ignore[assignment]
        return row[1], row[2]
    finally:
        conn.close()


def _fill_until_due(db: sqlmem.MemoryDB, calls: list[int]) -> None:
    i = 0
    while not calls:
        db.history.append(f"s{i % 3}", Message(role="user", content=f"hello message {i}"))
        i += 1
        assert i < 10 * AUTOCHECKPOINT_PAGES, "no checkpoint became due"


def test_the_due_checkpoint_runs_with_the_writer_free(open_db: OpenDB) -> None:
    db = open_db()
    engine = db._engine
    ran = Engine._passive_checkpoint
    seen: list[int] = []
    other: list[int] = []

    def checkpoint(self: Engine, checkpointer: object) -> None:
        if seen:  # the other thread's own write leaving, or a later due one
            ran(self, checkpointer)  # type: ignore[arg-type]
            return
        seen.append(1)
        # Another thread can write meanwhile: the write lock is not held.
        writer = threading.Thread(
            target=lambda: other.append(db.history.append("other", Message(role="user")))
        )
        writer.start()
        writer.join(timeout=30)
        assert not writer.is_alive() and other, "the writer lock was held by the checkpoint"
        ran(self, checkpointer)  # type: ignore[arg-type]

    engine._passive_checkpoint = checkpoint.__get__(engine)  # type: ignore[method-assign]
    _fill_until_due(db, seen)
    assert engine._checkpointer is not None and not engine._checkpointer.passive_due
    log, done = _wal_frames(db)
    assert done == log  # the deferred checkpoint copied everything (no reader was left)


def test_the_wal_starts_again_after_deferred_checkpoints(open_db: OpenDB) -> None:
    """Without the deferred PASSIVE checkpoints the WAL would hold every frame written."""
    db = open_db()
    for i in range(4 * AUTOCHECKPOINT_PAGES // 5):  # several frames per append (FTS)
        db.history.append(f"s{i % 3}", Message(role="user", content=f"hello message {i}"))
    log, _ = _wal_frames(db)
    assert log < 2 * AUTOCHECKPOINT_PAGES, log


def test_a_read_only_engine_has_no_checkpointer(open_db: OpenDB) -> None:
    db = open_db()
    db.history.append("s", Message(role="user", content="x"))
    path = db._engine.path
    db.close()
    with sqlmem.MemoryDB(path, _read_only=True) as ro:  # what the CLI's readers open
        assert ro._engine._checkpointer is None
        assert [m.content for m in ro.history.get_all("s")] == ["x"]
