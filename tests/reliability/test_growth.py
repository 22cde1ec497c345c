"""Bounded growth: the WAL does not grow without bound under a steady write load, even
while readers read all the time (checkpoint starvation), and `stats()` reports the sizes.

Regression: before `connection.WalCheckpointer`, 20,000 appends with three reading
threads left a 760 MB WAL (SQLite's PASSIVE auto-checkpoint never found a moment without
a reader snapshot to start the WAL again). SQLMEM_STRESS=1 writes 20,000 messages.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import apsw

import sqlmem
from sqlmem import Fact, Message
from sqlmem.sqlite.core.connection import JOURNAL_SIZE_LIMIT

STRESS = os.environ.get("SQLMEM_STRESS") == "1"
APPENDS = 20_000 if STRESS else 5_000

OpenDB = Callable[..., sqlmem.MemoryDB]


def test_wal_stays_bounded_with_readers_reading_all_the_time(open_db: OpenDB) -> None:
    db = open_db()
    db.facts.index_many([Fact(content=f"hello fact {i}") for i in range(200)])
    stop = threading.Event()
    reads = [0] * 3
    errors: list[BaseException] = []

    def read(k: int) -> None:
        try:
            while not stop.is_set():
                db.history.get_recent(f"s{k}", 20)
                db.history.search("hello")  # scores every message: long snapshots
                db.facts.search("hello fact")
                reads[k] += 1
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=read, args=(k,)) for k in range(3)]
    for t in readers:
        t.start()
    largest = 0
    slowest = 0.0
    started = time.monotonic()
    try:
        for i in range(APPENDS):
            before = time.monotonic()
            db.history.append(f"s{i % 3}", Message(role="user", content=f"hello message {i}"))
            slowest = max(slowest, time.monotonic() - before)
            if i % 100 == 0:
                largest = max(largest, db.stats()["wal_bytes"])
    finally:
        stop.set()
        for t in readers:
            t.join()
    elapsed = time.monotonic() - started
    assert not errors, errors
    assert min(reads) > 10, reads  # the readers really were reading throughout
    largest = max(largest, db.stats()["wal_bytes"])
    print(
        f"\n{APPENDS} appends in {elapsed:.1f}s with readers ({sum(reads)} read rounds): "
        f"largest WAL {largest / 2**20:.1f} MiB, slowest append {slowest * 1000:.0f} ms"
    )
    assert largest < JOURNAL_SIZE_LIMIT
    assert slowest < 2.0
    assert db.history.count("s0") == len(range(0, APPENDS, 3))
    db.checkpoint()
    assert db.stats()["wal_bytes"] == 0


def test_a_reader_pinning_a_snapshot_does_not_stall_the_writer_for_long(
    open_db: OpenDB,
) -> None:
    """A snapshot held for the whole run pins the WAL (nothing can reclaim it); the writer
    must still make progress, trying to restart the WAL less and less often."""
    db = open_db()
    db.history.append("s", Message(role="user", content="first"))
    reader = apsw.Connection(str(db.path))
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM messages").fetchall()
    stalls = 0.0
    waits = 0
    try:
        started = time.monotonic()
        for i in range(1000):
            before = time.monotonic()
            db.history.append("s", Message(role="user", content=f"message number {i}"))
            took = time.monotonic() - before
            if took > 0.1:
                stalls += took
                waits += 1
        elapsed = time.monotonic() - started
        pinned = db.stats()["wal_bytes"]
        assert reader.execute("SELECT count(*) FROM messages").fetchall()[0][0] == 1
    finally:
        reader.execute("ROLLBACK")
        reader.close()
    print(
        f"\npinned WAL {pinned / 2**20:.1f} MiB; writer waited {waits} times, "
        f"{stalls:.1f}s of {elapsed:.1f}s"
    )
    # Tries at 4,000, 5,000 and 7,000 frames (~1,000 appends write ~8,000 frames).
    assert waits <= 4
    assert stalls < 1.5
    # Once the reader let go, the WAL goes back to nothing.
    db.history.append("s", Message(role="user", content="after"))
    db.checkpoint()
    assert db.stats()["wal_bytes"] == 0
    assert db.history.count("s") == 1002


def test_stats_reports_file_and_wal_sizes(open_db: OpenDB) -> None:
    db = open_db()
    db.history.append_many("s", [Message(role="user", content=f"m {i}") for i in range(300)])
    stats = db.stats()
    assert stats["file_bytes"] == Path(db.path).stat().st_size
    assert stats["wal_bytes"] == Path(f"{db.path}-wal").stat().st_size > 0
    assert stats["page_count"] * stats["page_size"] >= stats["file_bytes"]
    frames, copied = db.checkpoint()
    # SQLite's own counts: every frame copied, and no more than the -wal file could hold
    # (a 32-byte header, then each page with a 24-byte frame header).
    assert 0 < copied == frames <= (stats["wal_bytes"] - 32) // (stats["page_size"] + 24)
    after = db.stats()
    assert after["wal_bytes"] == 0
    assert after["file_bytes"] == Path(db.path).stat().st_size >= stats["file_bytes"]
