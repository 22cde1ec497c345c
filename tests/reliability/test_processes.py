"""Many processes, many threads, one file: nothing lost, nothing doubled, no lock errors;
and a writer that never lets go makes sqlmem raise `StorageBusyError` promptly.

SQLMEM_STRESS=1 runs the shared-file workload for longer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem import Fact, Message

HERE = Path(__file__).parent
STRESS = os.environ.get("SQLMEM_STRESS") == "1"
PROCESSES = 4
THREADS = 3
SESSIONS = 3
SECONDS = 20.0 if STRESS else 4.0

OpenDB = Callable[..., sqlmem.MemoryDB]


def test_processes_and_threads_share_one_file(open_db: OpenDB, tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    db = open_db(path)  # created and migrated before the workers start
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                str(HERE / "proc_worker.py"),
                str(path),
                str(p),
                str(THREADS),
                str(SECONDS),
                str(SESSIONS),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for p in range(PROCESSES)
    ]
    results: dict[str, Any] = {}
    for w in workers:
        out, err = w.communicate(timeout=SECONDS + 60)
        assert w.returncode == 0, err.decode()
        results.update(json.loads(out))
    assert len(results) == PROCESSES * THREADS

    expected: dict[str, dict[int, str]] = defaultdict(dict)  # sid -> seq -> content
    fact_writes: dict[str, list[list[str]]] = defaultdict(list)  # id -> per-thread contents
    total = 0
    slowest = 0.0
    for result in results.values():
        slowest = max(slowest, result["slowest"])
        last_seq: dict[str, int] = {}
        per_fact: dict[str, list[str]] = defaultdict(list)
        for write in result["writes"]:
            if write[0] == "fact":
                per_fact[write[1]].append(write[2])
                continue
            sid, seqs, contents = write
            # a batch gets consecutive seqs, after this thread's earlier writes
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
            assert seqs[0] > last_seq.get(sid, 0)
            last_seq[sid] = seqs[-1]
            for seq, content in zip(seqs, contents, strict=True):
                assert seq not in expected[sid], f"seq {seq} of {sid} handed out twice"
                expected[sid][seq] = content
                total += 1
        for fid, contents in per_fact.items():
            fact_writes[fid].append(contents)
    assert total > 200, "the workers barely wrote: the test proves nothing"

    for sid, by_seq in expected.items():
        stored = db.history.get_all(sid)
        assert [m.seq for m in stored] == list(range(1, len(stored) + 1))  # gap-free
        assert {m.seq: m.content for m in stored} == by_seq  # none lost, none extra
        assert db.history.count(sid) == len(by_seq)
        for m in stored[:: max(1, len(stored) // 40)]:
            hits = db.history.search(m.content.split()[1], session_id=sid)
            assert [h.seq for h in hits] == [m.seq]

    for fid, per_thread in fact_writes.items():
        fact = db.facts.get(fid)
        assert fact is not None
        # Last write wins: the survivor is some thread's last write to this id.
        assert fact.content in {contents[-1] for contents in per_thread}
        assert [f.id for f in db.facts.search(fact.content.split()[1])] == [fid]
        superseded = [c for contents in per_thread for c in contents if c != fact.content]
        for content in superseded[:: max(1, len(superseded) // 30)]:
            assert db.facts.search(content.split()[1]) == []
    assert db.facts.count() == len(fact_writes)
    report = db.check()
    assert report.ok, report.problems
    print(f"\n{total} messages, {len(fact_writes)} facts; slowest call {slowest * 1000:.0f} ms")


@pytest.fixture
def lock_holder(db_path: Path) -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "lock_holder.py"), str(db_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        started.append(proc)
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"locked\n"
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()


def _release(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0
    proc.stdout.close()


def test_a_writer_holding_the_lock_makes_every_write_fail_promptly(
    open_db: OpenDB, db_path: Path, lock_holder: Callable[[], subprocess.Popen[bytes]]
) -> None:
    db = open_db(db_path, busy_timeout_ms=200)
    db.history.append("s", Message(role="user", content="before the lock"))
    db.facts.index(Fact(id="f", content="before the lock"))
    holder = lock_holder()
    calls: dict[str, Callable[[], object]] = {
        "append": lambda: db.history.append("s", Message(role="user", content="blocked")),
        "append_many": lambda: db.history.append_many(
            "s", [Message(role="user", content="blocked")] * 3
        ),
        "compact": lambda: db.history.compact("s", 0, summary="blocked"),
        "set_summary": lambda: db.history.set_summary("s", "blocked"),
        "purge": lambda: db.history.purge("s"),
        "index": lambda: db.facts.index(Fact(id="g", content="blocked")),
        "delete": lambda: db.facts.delete("f"),
        "checkpoint": db.checkpoint,
        "vacuum": db.vacuum,
    }
    outcomes: dict[str, tuple[str, float]] = {}

    def attempt(name: str, call: Callable[[], object]) -> None:
        started = time.monotonic()
        try:
            call()
            outcome = "returned"
        except sqlmem.StorageBusyError:
            outcome = "busy"
        except Exception as exc:  # reported below, with its type
            outcome = type(exc).__name__
        outcomes[name] = (outcome, time.monotonic() - started)

    threads = [threading.Thread(target=attempt, args=item) for item in calls.items()]
    started = time.monotonic()
    for t in threads:
        t.start()
    # Readers never wait for a writer in WAL mode, even while every write is stuck.
    assert [m.content for m in db.history.get_all("s")] == ["before the lock"]
    assert [f.id for f in db.facts.search("lock")] == ["f"]
    for t in threads:
        t.join(timeout=10)
    elapsed = time.monotonic() - started
    _release(holder)

    # Each call waits at most ~2 busy timeouts (the writer lock of this process, then
    # SQLite's), however many threads queue; all of them together stay bounded too.
    assert {name: o for name, (o, _) in outcomes.items()} == dict.fromkeys(calls, "busy")
    assert max(t for _, t in outcomes.values()) < 1.0, outcomes
    assert elapsed < 3.0
    # Nothing of the failed calls was written, and writing works again.
    assert [m.content for m in db.history.get_all("s")] == ["before the lock"]
    assert db.history.get_summary("s") == ""
    assert db.facts.get("f") is not None and db.facts.get("g") is None
    assert db.history.append("s", Message(role="user", content="after")) == 2
    assert db.check().ok


def test_a_writer_that_lets_go_within_the_timeout_is_waited_for(
    open_db: OpenDB, db_path: Path, lock_holder: Callable[[], subprocess.Popen[bytes]]
) -> None:
    db = open_db(db_path, busy_timeout_ms=5000)
    holder = lock_holder()
    timer = threading.Timer(0.3, _release, args=(holder,))
    timer.start()
    started = time.monotonic()
    assert db.history.append("s", Message(role="user", content="waited")) == 1
    assert 0.2 < time.monotonic() - started < 5.0
    timer.join()
    assert db.facts.get("held") is None  # the holder rolled back
