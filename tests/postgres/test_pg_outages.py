"""Outages on PostgreSQL (issue 21, "nothing lost"): the server restarted under a storm of
appends from four processes, and the server down for a while.

Every acknowledged append is stored at the seq it was given, each session's seqs stay
unique and gap-free, every call that fails meanwhile raises `StorageBusyError` (a
sqlmem error that says the database is unreachable, never a psycopg type), and the stores
recover by themselves: the same open databases work again once the server is back.

The server is this module's own (restarting the session's would disturb other tests).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pgserver
import psycopg
import pytest
from pgserver import new_agent_id

import sqlmem.postgres as sp
from sqlmem.config import StoreConfig
from sqlmem.errors import StorageBusyError
from sqlmem.records import Message

# One writer process: THREADS threads, each appending PER_THREAD messages, alternately to
# the session all processes share and to its own. A failed append is retried (that is what
# a caller does); every outcome is reported as one JSON line on stdout.
CHILD = """
import json, sys, threading
import sqlmem, sqlmem.postgres as sp
from sqlmem.errors import StorageBusyError
dsn, agent, name = sys.argv[1], sys.argv[2], sys.argv[3]
threads, per_thread = int(sys.argv[4]), int(sys.argv[5])
acked, failures, lock = [], [], threading.Lock()

def write(t):
    for i in range(per_thread):
        session = "shared" if i % 2 == 0 else f"{name}-{t}"
        text = f"{name} {t} {i}"
        for _ in range(500):
            try:
                seq = db.history.append(session, sqlmem.Message(role="user", content=text))
            except BaseException as exc:
                with lock:
                    failures.append([type(exc).__module__, type(exc).__name__, str(exc)])
                if not isinstance(exc, StorageBusyError):
                    return
                continue
            with lock:
                acked.append([session, seq, text])
            break

with sp.open(dsn, agent, sqlmem.StoreConfig(busy_timeout_ms=1000), pool_size=threads) as db:
    pool = [threading.Thread(target=write, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
print(json.dumps({"acked": acked, "failures": failures}))
"""

PROCESSES, THREADS, PER_THREAD = 4, 2, 60


@pytest.fixture(scope="module")
def server() -> Iterator[pgserver.PgServer]:
    server = pgserver.start()
    yield server
    server.stop()


def _started_at(dsn: str) -> object:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT pg_postmaster_start_time()").fetchone()
    assert row is not None
    return row[0]


def _wait_for_messages(db: sp.PostgresDB, session: str, at_least: int) -> None:
    """Poll until the storm has stored `at_least` messages in `session` (a condition)."""
    deadline = time.monotonic() + 60
    while db.history.count(session) < at_least:
        assert time.monotonic() < deadline, "the writers never got going"
        time.sleep(0.01)


def test_restart_during_a_four_process_append_storm_loses_nothing(
    server: pgserver.PgServer,
) -> None:
    agent = new_agent_id()
    started = _started_at(server.dsn)
    args = [server.dsn, agent]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, *args, f"p{n}", str(THREADS), str(PER_THREAD)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(PROCESSES)
    ]
    with sp.open(server.dsn, agent, pool_size=1) as watcher:
        for n in range(PROCESSES):  # every writer is open and writing
            for t in range(THREADS):
                _wait_for_messages(watcher, f"p{n}-{t}", 3)
        server.restart()  # pg_ctl restart -m fast: in-flight transactions are rolled back
        outputs = [child.communicate(timeout=240)[0] for child in children]
        assert [child.returncode for child in children] == [0] * PROCESSES
        reports = [json.loads(out) for out in outputs]
        assert _started_at(server.dsn) != started  # the server did restart mid-storm

        failures = [f for r in reports for f in r["failures"]]
        # CommitUnknownError (a StorageBusyError) only when the restart cut a COMMIT short.
        busy = ("StorageBusyError", "CommitUnknownError")
        assert all(name in busy for _, name, _ in failures), failures
        assert not [f for f in failures if f[0].startswith("psycopg")]
        acked = [tuple(a) for r in reports for a in r["acked"]]
        assert len(acked) == PROCESSES * THREADS * PER_THREAD  # every call succeeded at last
        sessions = {session for session, _, _ in acked}
        for session in sessions:
            stored = {m.seq: m.content for m in watcher.history.get_all(session)}
            assert sorted(stored) == list(range(1, len(stored) + 1)), session  # gap-free
            mine = [(seq, text) for s, seq, text in acked if s == session]
            assert len({seq for seq, _ in mine}) == len(mine), session  # seqs unique
            assert all(stored[seq] == text for seq, text in mine), session  # nothing lost
            # A write whose commit reached the server but whose answer was lost in the
            # restart may be stored once more by the retry; nothing else is extra.
            assert set(stored.values()) == {text for _, text in mine}


def _append(db: sp.PostgresDB, text: str) -> int:
    return db.history.append("s", Message(role="user", content=text))


def test_server_down_calls_say_so_and_the_store_recovers_alone(server: pgserver.PgServer) -> None:
    with sp.open(server.dsn, new_agent_id(), StoreConfig(busy_timeout_ms=500), pool_size=3) as db:
        assert [_append(db, f"m{i}") for i in range(3)] == [1, 2, 3]
        server.shutdown()
        try:
            for call in (
                lambda: _append(db, "lost"),
                lambda: db.history.get_recent("s", 10),
                lambda: db.facts.search("anything"),
                lambda: db.history.count("s"),
            ):
                start = time.monotonic()
                with pytest.raises(StorageBusyError, match=r"unreachable|unavailable") as info:
                    call()
                assert time.monotonic() - start < 5  # the busy timeout, not a hang
                assert isinstance(info.value.__cause__, psycopg.Error)
        finally:
            server.start_again()
        # The same open database, no reopen: back within the pool's retry interval.
        deadline = time.monotonic() + 30
        while True:
            try:
                seq = _append(db, "back")
                break
            except StorageBusyError:
                assert time.monotonic() < deadline, "the store never recovered"
        assert seq == 4  # the refused append took no seq
        assert [m.content for m in db.history.get_all("s")] == ["m0", "m1", "m2", "back"]


def test_pgserver_restart_keeps_the_socket_and_the_log(server: pgserver.PgServer) -> None:
    """The handle the fault tests rely on: restart and stop/start reuse the options."""
    before = _started_at(server.dsn)
    server.restart()
    assert _started_at(server.dsn) != before
    assert Path(server.log).exists() and "ready to accept connections" in server.log.read_text()
