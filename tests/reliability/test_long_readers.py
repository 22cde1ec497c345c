"""Long readers (issue 23, item 3): the WAL stays bounded while reads that each hold their
snapshot for a long time overlap all the time.

Regression: three threads reading a 100,000-message session in a loop, staggered so that
one of them always holds a snapshot, and one thread appending: the WAL reached 188 MB in
20 s with the 0.1 code (2.57 GB in 60 s in the attack's run, with longer reads). A RESTART
checkpoint never found a moment with no reader. Now the writer's last resort pauses new
reads until the reads in flight end (connection.WalCheckpointer), and the WAL stays
within RESTART_PAGES frames plus a few transactions. SQLMEM_STRESS=1 runs 5 minutes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import sqlmem
from sqlmem import Message
from sqlmem.sqlite.core.connection import AUTOCHECKPOINT_PAGES, RESTART_PAGES

STRESS = os.environ.get("SQLMEM_STRESS") == "1"
SECONDS = 300.0 if STRESS else 8.0
BIG = 100_000

OpenDB = Callable[..., sqlmem.MemoryDB]


def test_wal_stays_bounded_under_overlapping_long_reads(open_db: OpenDB, db_path: Path) -> None:
    db = open_db(history_search=False)
    for start in range(0, BIG, 5_000):
        db.history.append_many(
            "big", [Message(role="user", content=f"m{start + i} " + "y" * 40) for i in range(5_000)]
        )
    db.checkpoint()
    page = db.stats()["page_size"]
    bound = (RESTART_PAGES + 2 * AUTOCHECKPOINT_PAGES) * (page + 24)  # 24: a frame's header
    stop = threading.Event()
    reads = [0, 0, 0]
    appends = [0]
    errors: list[BaseException] = []

    def read(k: int) -> None:
        try:
            time.sleep(0.25 * k)  # staggered: some reader always holds a snapshot
            while not stop.is_set():
                assert len(db.history.get_all("big")) == BIG
                reads[k] += 1
        except BaseException as exc:
            errors.append(exc)

    def write() -> None:
        try:
            while not stop.is_set():
                db.history.append("w", Message(role="user", content="z" * 1000))
                appends[0] += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=read, args=(k,)) for k in range(3)]
    threads.append(threading.Thread(target=write))
    for thread in threads:
        thread.start()
    peak = 0
    wal = Path(f"{db_path}-wal")
    deadline = time.monotonic() + SECONDS
    try:
        while time.monotonic() < deadline and not errors:
            peak = max(peak, wal.stat().st_size if wal.exists() else 0)
            time.sleep(0.02)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert not errors, errors
    assert all(reads), reads  # every reader kept reading
    assert db.history.count("w") == appends[0] > 0
    assert peak <= bound, f"WAL peaked at {peak / 2**20:.1f} MB (bound {bound / 2**20:.1f} MB)"


# The reopen that commits a large transaction from inside Engine._enter (the open hook
# indexing messages another handle stored with history search off), while another
# connection holds an old snapshot so the plain RESTART gives up: the writer's last resort
# used to wait for the engine's lock, which that very thread held (a hang).
_REOPEN = """
import subprocess, sys
import sqlmem
from sqlmem import Message
path = sys.argv[1]
db = sqlmem.open(path)  # history search on
db.history.append("s", Message(role="user", content="first"))
assert db._engine.suspend()  # as the factory's LRU bound does
with sqlmem.open(path, sqlmem.StoreConfig(history_search=False)) as off:
    for start in range(0, 40_000, 5_000):
        off.history.append_many(
            "t", [Message(role="user", content=f"m{start + i} " + "word " * 80)
                  for i in range(5_000)])
    off.checkpoint()
# Another process holds an old snapshot (in this one, the stdlib's SQLite would not see
# apsw's locks at all).
holder = subprocess.Popen(
    [sys.executable, "-c", HOLD, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    text=True)
assert holder.stdout.readline().strip() == "holding"
# reopens, and the open hook indexes 40,000 messages in one transaction
print(len(db.history.search("m39999", session_id="t")))
holder.communicate("")
db.close()
"""

_HOLD = """
import sqlite3, sys
reader = sqlite3.connect(sys.argv[1], isolation_level=None)
reader.execute("BEGIN")
reader.execute("SELECT count(*) FROM messages").fetchall()
print("holding", flush=True)
sys.stdin.read()  # until the parent is done
"""


def test_a_reopen_that_commits_a_large_transaction_never_hangs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"HOLD = {_HOLD!r}\n" + _REOPEN, str(tmp_path / "memory.db")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1"]


def test_a_backup_in_flight_does_not_stall_every_read(open_db: OpenDB) -> None:
    """Review finding: `backup()` and `check()` hold one snapshot for their whole copy. The
    writer's last resort paused every new read while it waited for that read to end,
    which it never did in time: reads stalled for half the busy timeout, again and again.
    Now a long read in flight means no pause (the WAL waits for the backup instead)."""
    db = open_db(busy_timeout_ms=10_000)  # a pause would wait up to 5 s
    db.history.append("r", Message(role="user", content="hello"))
    holding, done = threading.Event(), threading.Event()
    slowest = [0.0]

    def hold_a_long_read() -> None:  # what backup() and check() do, for longer
        with db._engine.long_read() as conn:
            conn.execute("BEGIN")  # one snapshot for the whole "copy"
            conn.execute("SELECT count(*) FROM messages").fetchall()
            holding.set()
            done.wait(30)

    def read() -> None:
        while not done.is_set():
            started = time.monotonic()
            db.history.get_recent("r", 5)
            slowest[0] = max(slowest[0], time.monotonic() - started)
            time.sleep(0.005)

    threads = [threading.Thread(target=hold_a_long_read), threading.Thread(target=read)]
    threads[0].start()
    holding.wait(10)
    threads[1].start()
    try:
        for _ in range(6_000):  # past RESTART_PAGES frames of WAL
            db.history.append("w", Message(role="user", content="z" * 4000))
    finally:
        done.set()
        for thread in threads:
            thread.join()
    assert slowest[0] < 2.5, f"a read waited {slowest[0]:.1f} s"
