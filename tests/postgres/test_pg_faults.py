"""Faults on PostgreSQL (issue 21): lock waits past the busy timeout, a connection killed
by the server mid-transaction, connections killed while idle in the pool, a server restart.
Every failure is a sqlmem error, a write is whole or absent, and the store recovers alone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pgserver
import psycopg
import pytest
from pgserver import new_agent_id

import sqlmem.postgres as sp
from sqlmem.config import StoreConfig
from sqlmem.errors import StorageBusyError
from sqlmem.records import Fact, Message


def _msg(text: str) -> Message:
    return Message(role="user", content=text)


def _in_transaction(admin: psycopg.Connection[Any]) -> int:
    """Connections other than `admin` left inside a transaction."""
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE pid != pg_backend_pid()"
        " AND backend_type = 'client backend' AND state LIKE 'idle in transaction%'"
    ).fetchone()
    return int(row[0]) if row else 0


def _wait_for(admin: psycopg.Connection[Any], query: str, args: Any) -> Any:
    """Poll until `query` returns a row (a condition, not a guess), at most 10 s."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        row = admin.execute(query, args).fetchone()
        if row is not None:
            return row
        time.sleep(0.01)
    raise AssertionError(f"condition never held: {query}")


def test_lock_held_past_the_busy_timeout_is_storage_busy(open_pg: Any, pg_dsn: str) -> None:
    db = open_pg(busy_timeout_ms=200)
    assert db.history.append("s", _msg("first")) == 1
    with psycopg.connect(pg_dsn) as admin:
        admin.execute(  # another server's writer, holding the session's counter row
            "SELECT 1 FROM sessions WHERE agent_id = %s FOR UPDATE", (db.agent_id,)
        )
        start = time.monotonic()
        with pytest.raises(StorageBusyError) as info:
            db.history.append("s", _msg("waits"))
        assert time.monotonic() - start < 5
        assert isinstance(info.value.__cause__, psycopg.Error)
        assert [m.content for m in db.history.get_recent("s", 5)] == ["first"]  # reads go on
        admin.rollback()
        assert _in_transaction(admin) == 0
    assert db.history.append("s", _msg("after")) == 2  # the refused append took no seq


def test_busy_timeout_becomes_lock_and_statement_timeouts(open_pg: Any) -> None:
    for busy, lock, statement in ((250, "250ms", "1s"), (0, "1ms", "1s"), (7000, "7s", "7s")):
        db = open_pg(busy_timeout_ms=busy)
        with db._engine.read() as conn:
            assert conn.execute("SHOW lock_timeout").fetchone() == (lock,)
            assert conn.execute("SHOW statement_timeout").fetchone() == (statement,)


def test_connection_killed_mid_transaction_writes_nothing_and_pool_recovers(
    open_pg: Any, pg_dsn: str
) -> None:
    db = open_pg(busy_timeout_ms=20_000)
    db.history.append("s", _msg("first"))
    outcome: list[BaseException | int] = []
    with psycopg.connect(pg_dsn) as holder, psycopg.connect(pg_dsn, autocommit=True) as admin:
        holder.execute("SELECT 1 FROM sessions WHERE agent_id = %s FOR UPDATE", (db.agent_id,))

        def append() -> None:
            try:
                outcome.append(db.history.append_many("s", [_msg("a"), _msg("b")]))  # type: ignore[arg-type]
            except BaseException as exc:
                outcome.append(exc)

        writer = threading.Thread(target=append)
        writer.start()
        # The writer is inside its transaction (statistics row taken), waiting for seqs.
        (pid,) = _wait_for(
            admin,
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND query LIKE %s AND pid != pg_backend_pid()",
            ("%INSERT INTO sessions%",),
        )
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        writer.join(timeout=30)
        holder.rollback()
    (error,) = outcome
    assert isinstance(error, StorageBusyError), error
    assert not isinstance(error, psycopg.Error)
    assert db.history.count("s") == 1  # absent, not half written
    assert db.history.append("s", _msg("next")) == 2  # a new connection, seqs gap-free
    with psycopg.connect(pg_dsn) as admin:
        assert _in_transaction(admin) == 0


def test_idle_connections_killed_in_the_pool_are_replaced(open_pg: Any, pg_dsn: str) -> None:
    db = open_pg()
    db.facts.index(_fact("kept"))
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE pid != pg_backend_pid() AND backend_type = 'client backend'"
        )
    assert [f.content for f in db.facts.search("kept")] == ["kept"]
    db.facts.index(_fact("again"))
    assert db.facts.count() == 2


def _fact(text: str) -> Fact:
    return Fact(content=text)


def test_a_text_past_the_tsvector_limit_is_stored_whole(open_pg: Any, pg_dsn: str) -> None:
    """200,000 distinct words make a tsvector past PostgreSQL's 1 MB: the fact is kept
    whole (it used to be refused as "too large") and found by the words of its first
    megabyte of index. Server errors inside a write: test_pg_error_classes.py."""
    db = open_pg()
    huge = " ".join(f"w{i}" for i in range(200_000))
    stored = db.facts.index(_fact(huge))
    back = db.facts.get(stored)
    assert back is not None and back.content == huge
    assert [f.id for f in db.facts.search("w17")] == [stored]
    assert db.facts.search("w199999") == []  # past the index's megabyte (ranking.py)
    db.facts.index(_fact("small"))
    assert db.facts.count() == 2
    with psycopg.connect(pg_dsn) as admin:
        assert _in_transaction(admin) == 0


@pytest.fixture(scope="module")
def own_server() -> Iterator[pgserver.PgServer]:
    """A server of this module's own: restarting the session's would disturb the others."""
    server = pgserver.start()
    yield server
    server.stop()


def test_store_works_again_after_a_server_restart(own_server: pgserver.PgServer) -> None:
    with sp.open(own_server.dsn, new_agent_id(), pool_size=2) as db:
        assert db.history.append_many("s", [_msg("a"), _msg("b")]) == [1, 2]
        own_server.restart()
        seqs = None
        for _ in range(50):  # calls during the outage: sqlmem errors only
            try:
                seqs = db.history.append("s", _msg("c"))
                break
            except StorageBusyError:
                continue
        assert seqs == 3
        assert [m.content for m in db.history.get_all("s")] == ["a", "b", "c"]


def test_writes_during_a_restart_are_whole_or_absent(own_server: pgserver.PgServer) -> None:
    """Four writer threads append while the server restarts (`pg_ctl restart -m fast`):
    every acknowledged append is there at its seq, seqs stay gap-free, and the failures
    in between are StorageBusyError only. (Processes on several machines: next stage.)"""
    agent = new_agent_id()
    acknowledged: dict[str, dict[int, str]] = {f"s{n}": {} for n in range(4)}
    failures: list[BaseException] = []
    halfway = threading.Event()
    with sp.open(own_server.dsn, agent, StoreConfig(busy_timeout_ms=2000), pool_size=4) as db:

        def write(session: str) -> None:
            for i in range(40):
                text = f"{session} {i}"
                for _ in range(200):
                    try:
                        acknowledged[session][db.history.append(session, _msg(text))] = text
                        break
                    except StorageBusyError as exc:
                        failures.append(exc)
                    except BaseException as exc:
                        failures.append(exc)
                        return
                if i == 10:
                    halfway.set()

        threads = [threading.Thread(target=write, args=(s,)) for s in acknowledged]
        for t in threads:
            t.start()
        assert halfway.wait(timeout=60)
        own_server.restart()
        for t in threads:
            t.join(timeout=120)
        assert all(isinstance(f, StorageBusyError) for f in failures), failures
        for session, acked in acknowledged.items():
            stored = {m.seq: m.content for m in db.history.get_all(session)}
            assert sorted(stored) == list(range(1, len(stored) + 1))  # gap-free
            assert all(stored[seq] == text for seq, text in acked.items())  # nothing lost
            assert len(acked) == 40
