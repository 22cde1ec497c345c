"""Maintenance beside other connections: three calls that once failed or blocked.

- `checkpoint()` and `vacuum()` raised StorageBusyError at once while another
  connection was checkpointing: SQLite does not call the busy handler for the checkpoint
  lock. They must wait, up to the busy timeout, like every other call.
- `backup(dest)` silently replaced any existing file (another program's
  database) and left a half-written dest when it failed.
- `check()` held the file's write lock for FTS5's integrity-check (seconds on a
  large store), so another writer with a shorter busy timeout failed.

The checkpoint lock is held by a real SQLite connection in a thread: its PASSIVE
checkpoint goes through a VFS that blocks in the WAL's xSync (the first thing a
checkpoint does with the lock held) until the test lets it go.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

import sqlmem
from sqlmem import Fact, Message

OpenDB = Callable[..., sqlmem.MemoryDB]


class _GateVFS(apsw.VFS):
    """Pass-through VFS whose WAL xSync blocks while the gate is closed."""

    def __init__(self) -> None:
        self.holding = threading.Event()  # a sync is blocked (checkpoint lock held)
        self.release = threading.Event()
        super().__init__("sqlmem-gate", "unix")

    def xOpen(self, name: Any, flags: list[int]) -> apsw.VFSFile:
        return _GateFile(self, name, flags)


class _GateFile(apsw.VFSFile):
    def __init__(self, vfs: _GateVFS, name: Any, flags: list[int]) -> None:
        path = name.filename() if isinstance(name, apsw.URIFilename) else name
        self._vfs = vfs
        self._wal = isinstance(path, str) and path.endswith("-wal")
        super().__init__("unix", name, flags)

    def xSync(self, flags: int) -> None:
        if self._wal and not self._vfs.release.is_set():
            self._vfs.holding.set()
            self._vfs.release.wait(timeout=30)
        super().xSync(flags)


@pytest.fixture
def checkpointing() -> Iterator[Callable[[Path], threading.Event]]:
    """`checkpointing(path)`: another connection is inside a checkpoint of `path` when it
    returns, holding the checkpoint lock until the returned event is set."""
    vfs = _GateVFS()
    threads: list[threading.Thread] = []
    conns: list[apsw.Connection] = []

    def start(path: Path) -> threading.Event:
        conn = apsw.Connection(str(path), vfs="sqlmem-gate")
        conns.append(conn)
        thread = threading.Thread(target=lambda: conn.pragma("wal_checkpoint", "PASSIVE"))
        threads.append(thread)
        thread.start()
        assert vfs.holding.wait(timeout=10), "the other checkpoint never started"
        return vfs.release

    try:
        yield start
    finally:
        vfs.release.set()
        for thread in threads:
            thread.join()
        for conn in conns:
            conn.close()
        vfs.unregister()


def _wal_bytes(db: sqlmem.MemoryDB) -> int:
    wal = Path(f"{db.path}-wal")
    return wal.stat().st_size if wal.exists() else 0


def _wal_frames(db: sqlmem.MemoryDB) -> int:
    """Frames the -wal file has room for (a 32-byte header, then page + 24-byte frame
    headers): at least the frames a checkpoint can find in it."""
    return max(0, _wal_bytes(db) - 32) // (db.stats()["page_size"] + 24)


def _release_after(event: threading.Event, seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, event.set)
    timer.start()
    return timer


# -- item 10 ----------------------------------------------------------------------------


def test_checkpoint_waits_for_another_connections_checkpoint(
    open_db: OpenDB, checkpointing: Callable[[Path], threading.Event]
) -> None:
    """Regression: this once raised StorageBusyError at once, without waiting."""
    db = open_db(busy_timeout_ms=5000)
    db.history.append_many("s", [Message(role="user", content=f"m {i}") for i in range(50)])
    wal_frames = _wal_frames(db)
    release = checkpointing(db.path)
    timer = _release_after(release, 0.3)
    try:
        frames, copied = db.checkpoint()
    finally:
        timer.cancel()
    # SQLite's own counts: every frame of the WAL copied, none beyond what the file held.
    assert 0 < copied == frames <= wal_frames
    assert _wal_bytes(db) == 0
    assert db.checkpoint() == (0, 0)  # an empty WAL: nothing to copy


def test_checkpoint_gives_up_after_the_busy_timeout(
    open_db: OpenDB, checkpointing: Callable[[Path], threading.Event]
) -> None:
    db = open_db(busy_timeout_ms=200)
    db.history.append_many("s", [Message(role="user", content=f"m {i}") for i in range(50)])
    checkpointing(db.path)  # never released before the timeout
    started = time.monotonic()
    with pytest.raises(sqlmem.StorageBusyError):
        db.checkpoint()
    waited = time.monotonic() - started
    assert 0.15 <= waited < 3.0, waited


def test_vacuum_waits_for_another_connections_checkpoint_and_keeps_its_rebuild(
    open_db: OpenDB, checkpointing: Callable[[Path], threading.Event]
) -> None:
    """Regression: VACUUM ran, then the TRUNCATE checkpoint failed at
    once and the call raised, leaving deleted text in the file."""
    db = open_db(busy_timeout_ms=5000)
    secret = "zebracornsecret"
    db.facts.index(Fact(id="s", content=f"the password is {secret}"))
    db.history.append_many("s", [Message(role="user", content=f"m {i}") for i in range(50)])
    db.checkpoint()
    db.facts.delete("s")
    db.history.append("s", Message(role="user", content="one more frame in the WAL"))
    release = checkpointing(db.path)
    timer = _release_after(release, 0.3)
    try:
        db.vacuum()
    finally:
        timer.cancel()
    for suffix in ("", "-wal"):
        file = Path(f"{db.path}{suffix}")
        if file.exists():
            assert secret.encode() not in file.read_bytes()
    assert db.check().ok


# -- item 11 ----------------------------------------------------------------------------


def test_backup_never_replaces_an_existing_file(
    open_db: OpenDB, db: sqlmem.MemoryDB, tmp_path: Path
) -> None:
    """Regression: another program's database was overwritten."""
    db.facts.index(Fact(content="ours"))
    theirs = tmp_path / "theirs.db"
    conn = sqlite3.connect(theirs)
    conn.execute("CREATE TABLE accounts(name TEXT)")
    conn.execute("INSERT INTO accounts VALUES ('precious')")
    conn.commit()
    conn.close()
    other_agent = open_db(tmp_path / "other" / "memory.db")
    other_agent.facts.index(Fact(content="another agent's memory"))
    other_agent.checkpoint()
    text = tmp_path / "notes.txt"
    text.write_text("notes")
    empty = tmp_path / "empty.db"
    empty.touch()
    for existing in (theirs, other_agent.path, text, empty):
        before = existing.read_bytes()
        with pytest.raises(sqlmem.InvalidArgumentError, match="already exists"):
            db.backup(existing)
        assert existing.read_bytes() == before
    assert other_agent.facts.count() == 1


def test_backup_refuses_a_stale_journal_beside_dest(db: sqlmem.MemoryDB, tmp_path: Path) -> None:
    """SQLite would apply a leftover -wal or -journal to the new copy."""
    for suffix in ("-wal", "-journal"):
        stale = tmp_path / f"copy{suffix}.db"
        Path(f"{stale}{suffix}").write_bytes(b"left over")
        with pytest.raises(sqlmem.InvalidArgumentError, match="already exists"):
            db.backup(stale)
        assert not stale.exists()


def test_backup_writes_under_a_temporary_name(db: sqlmem.MemoryDB, tmp_path: Path) -> None:
    db.facts.index(Fact(content="kept"))
    dest = db.backup(tmp_path / "backups" / "copy.db")
    assert sorted(p.name for p in dest.parent.iterdir()) == ["copy.db"]
    with sqlmem.open(dest) as copy:
        assert copy.facts.count() == 1


# -- item 12 ----------------------------------------------------------------------------


def test_check_does_not_block_another_writer(open_db: OpenDB, db_path: Path) -> None:
    """Regression: check() held the write lock for FTS5's
    integrity-check; a writer with a shorter busy timeout failed meanwhile. Here the
    writer does not wait at all (busy timeout 0): any lock check() takes makes it fail."""
    db = open_db(db_path)
    for s in range(10):
        db.history.append_many(
            f"s{s}",
            [Message(role="user", content=f"message {s} {i} about apples") for i in range(1000)],
        )
    writer = open_db(db_path, busy_timeout_ms=0)  # another writer of the same file
    stop = threading.Event()
    errors: list[BaseException] = []
    appended = threading.Event()

    def write() -> None:
        try:
            while not stop.is_set():
                writer.history.append("live", Message(role="user", content="still here"))
                appended.set()
        except BaseException as exc:
            errors.append(exc)
            appended.set()

    thread = threading.Thread(target=write)
    thread.start()
    try:
        assert appended.wait(timeout=10)
        reports = [db.check() for _ in range(3)]
    finally:
        stop.set()
        thread.join()
    assert not errors, errors
    assert all(r.ok for r in reports), [r.problems for r in reports]
    assert writer.history.count("live") > 0
