"""Every class of server error inside a write, and connections killed mid-transaction
(issue 21, "nothing lost").

A test trigger on this module's own server makes an insert fail with any SQLSTATE asked
for (content "fault CODE"), or sleep (content "sleep SECONDS"), inside the store's own
transaction, after the statistics row and the seq counter were taken. For each: the
right sqlmem error (psycopg's as `__cause__`), nothing written, no seq consumed, no
connection handed back to the pool inside a transaction (the pool's `putconn` is watched),
none left 'idle in transaction' on the server, and the store works on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pgserver
import psycopg
import pytest
from pgserver import new_agent_id
from psycopg.pq import TransactionStatus

import sqlmem.postgres as sp
from sqlmem.config import StoreConfig
from sqlmem.errors import InvalidArgumentError, SqlmemError, StorageBusyError
from sqlmem.postgres.history import PostgresHistoryPort
from sqlmem.records import Fact, Message

TRIGGER = """
CREATE FUNCTION sqlmem_test_fault() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.content LIKE 'fault %' THEN
        RAISE EXCEPTION 'forced by the test' USING ERRCODE = split_part(NEW.content, ' ', 2);
    ELSIF NEW.content LIKE 'sleep %' THEN
        PERFORM pg_sleep(split_part(NEW.content, ' ', 2)::float8);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER sqlmem_test_fault BEFORE INSERT OR UPDATE ON facts
    FOR EACH ROW EXECUTE FUNCTION sqlmem_test_fault();
CREATE TRIGGER sqlmem_test_fault BEFORE INSERT OR UPDATE ON messages
    FOR EACH ROW EXECUTE FUNCTION sqlmem_test_fault();
"""

#: SQLSTATE -> the sqlmem error it must become (SPEC 11, 19; sqlmem/postgres/errors.py).
CLASSES: dict[str, type[SqlmemError]] = {
    "40001": StorageBusyError,  # serialization failure: retry
    "40P01": StorageBusyError,  # deadlock detected
    "55P03": StorageBusyError,  # lock not available (lock_timeout)
    "57014": StorageBusyError,  # query canceled (statement_timeout)
    "57P01": StorageBusyError,  # admin shutdown
    "53300": StorageBusyError,  # too many connections (class 53: resources)
    "08006": StorageBusyError,  # connection failure
    "54000": InvalidArgumentError,  # program limit exceeded (a value too large)
    "22023": InvalidArgumentError,  # data exception
    "23505": SqlmemError,  # unique violation: a bug, reported as what it is
    "42501": SqlmemError,  # insufficient privilege (a misconfigured role)
    "XX000": SqlmemError,  # internal error
}


@pytest.fixture(scope="module")
def server() -> Iterator[pgserver.PgServer]:
    server = pgserver.start()
    sp.open(server.dsn, new_agent_id()).close()  # the schema
    with psycopg.connect(server.dsn, autocommit=True) as admin:
        admin.execute(TRIGGER)
    yield server
    server.stop()


@pytest.fixture
def watched(server: pgserver.PgServer) -> Iterator[Callable[..., Any]]:
    """`watched(**config)`: a fresh agent's database whose pool records the transaction
    status of every connection handed back to it (`returned`)."""
    opened: list[Any] = []

    def open_db(**config: Any) -> Any:
        db = sp.open(server.dsn, new_agent_id(), StoreConfig(**config), pool_size=3)
        pool = db._engine._pool
        putconn = pool.putconn
        db.returned = []

        def watching(conn: Any) -> None:
            db.returned.append(conn.info.transaction_status)
            putconn(conn)

        pool.putconn = watching
        opened.append(db)
        return db

    yield open_db
    for db in opened:
        db.close()


def _clean(db: Any, dsn: str) -> None:
    """No connection went back to the pool inside a transaction, none is left in one."""
    assert db.returned, "the pool watch saw nothing"
    bad = {TransactionStatus.INTRANS, TransactionStatus.INERROR, TransactionStatus.ACTIVE}
    assert not [s for s in db.returned if s in bad], db.returned
    with psycopg.connect(dsn) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE pid != pg_backend_pid()"
            " AND backend_type = 'client backend' AND state LIKE 'idle in transaction%'"
        ).fetchone()
    assert row == (0,)


def _msg(text: str) -> Message:
    return Message(role="user", content=text)


@pytest.mark.parametrize("code", sorted(CLASSES))
def test_each_error_class_inside_a_write(
    code: str, watched: Callable[..., Any], server: pgserver.PgServer
) -> None:
    db = watched()
    assert db.history.append("s", _msg("first")) == 1
    db.facts.index(Fact(id="kept", content="kept"))
    for call in (
        lambda: db.history.append("s", _msg(f"fault {code}")),
        lambda: db.history.append_many("s", [_msg("fine"), _msg(f"fault {code}")]),
        lambda: db.facts.index(Fact(id="f", content=f"fault {code}")),
        lambda: db.facts.index_many([Fact(id="g", content="fine"), Fact(content=f"fault {code}")]),
        lambda: db.facts.index(Fact(id="kept", content=f"fault {code}")),  # an update
    ):
        with pytest.raises(SqlmemError) as info:
            call()
        assert type(info.value) is CLASSES[code], info.value
        cause = info.value.__cause__
        assert isinstance(cause, psycopg.Error) and cause.sqlstate == code
    assert [m.content for m in db.history.get_all("s")] == ["first"]  # whole or absent
    assert [(f.id, f.content) for f in db.facts.list()] == [("kept", "kept")]
    assert db.history.append("s", _msg("next")) == 2  # no seq was consumed
    assert [f.id for f in db.facts.search("kept")] == ["kept"]  # statistics unharmed
    _clean(db, server.dsn)


def test_a_real_statement_timeout_inside_a_write(
    watched: Callable[..., Any], server: pgserver.PgServer
) -> None:
    db = watched(busy_timeout_ms=1000)  # statement_timeout 1 s
    with pytest.raises(StorageBusyError, match="busy") as info:
        db.facts.index(Fact(content="sleep 3"))
    assert isinstance(info.value.__cause__, psycopg.errors.QueryCanceled)
    assert db.facts.count() == 0
    db.facts.index(Fact(content="quick"))
    _clean(db, server.dsn)


def test_lock_timeout_inside_a_snapshot_read(
    watched: Callable[..., Any], server: pgserver.PgServer
) -> None:
    """A read of several statements (one repeatable-read transaction: CJK search) that
    times out waiting for a lock leaves no transaction behind either."""
    db = watched(busy_timeout_ms=200)
    db.facts.index(Fact(content="用户喜欢跑步"))
    with psycopg.connect(server.dsn) as admin:
        admin.execute("LOCK TABLE facts IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(StorageBusyError) as info:
            db.facts.search("跑步")
        assert isinstance(info.value.__cause__, psycopg.errors.LockNotAvailable)
        admin.rollback()
    assert [f.content for f in db.facts.search("跑步")] == ["用户喜欢跑步"]
    _clean(db, server.dsn)


def test_interrupt_mid_transaction_rolls_back(
    watched: Callable[..., Any], server: pgserver.PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C (or any exception of the caller's) between two statements of a write: the
    exception is the caller's own, and the transaction is rolled back, seq not taken. An
    append is one statement (nothing between), except with max_history_len: the boundary
    moves in the append's transaction; a fact batch is lock, statistics, then upsert."""
    db = watched(max_history_len=1)
    db.history.append("s", _msg("first"))
    db.facts.index(Fact(id="first", content="first words"))

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(psycopg.Cursor, "executemany", interrupted)
        patch.setattr(PostgresHistoryPort, "_archive", interrupted)
        with pytest.raises(KeyboardInterrupt):
            db.history.append("s", _msg("second"))
        with pytest.raises(KeyboardInterrupt):
            db.facts.index_many([Fact(id="a", content="more words"), Fact(id="b", content="x")])
    assert db.history.append("s", _msg("third")) == 2
    assert [m.content for m in db.history.get_all("s", include_archived=True)] == [
        "first",
        "third",
    ]
    assert [f.id for f in db.facts.list()] == ["first"]
    db.facts.index(Fact(id="c", content="words again"))
    with psycopg.connect(server.dsn) as admin:  # the statistics count what is stored
        row = admin.execute(
            "SELECT docs, tokens FROM corpus_stats WHERE agent_id = %s ORDER BY corpus",
            (db._engine.agent_id,),
        ).fetchall()
    assert row == [(2, 4), (2, 2)]
    _clean(db, server.dsn)


def _pid_of_sleeper(admin: psycopg.Connection[Any], table: str) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # poll a condition: the write is inside pg_sleep
        row = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
            " AND query LIKE %s AND pid != pg_backend_pid()",
            (f"%INSERT INTO {table}%",),
        ).fetchone()
        if row is not None:
            return int(row[0])
        time.sleep(0.01)
    raise AssertionError("the write never reached the trigger")


@pytest.mark.parametrize("table", ["facts", "messages"])
def test_terminated_mid_transaction_the_pool_replaces_the_connection(
    table: str, watched: Callable[..., Any], server: pgserver.PgServer
) -> None:
    db = watched(busy_timeout_ms=30_000)
    db.history.append("s", _msg("first"))
    outcome: list[BaseException | object] = []

    def write() -> None:
        try:
            if table == "facts":
                outcome.append(db.facts.index_many([Fact(content="a"), Fact(content="sleep 20")]))
            else:
                outcome.append(db.history.append_many("s", [_msg("a"), _msg("sleep 20")]))
        except BaseException as exc:
            outcome.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    with psycopg.connect(server.dsn, autocommit=True) as admin:
        pid = _pid_of_sleeper(admin, table)
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    writer.join(timeout=30)
    (error,) = outcome
    assert isinstance(error, StorageBusyError), error
    assert isinstance(error.__cause__, psycopg.OperationalError)
    assert db.facts.count() == 0 and db.history.count("s") == 1  # absent, not half written
    stats = db._engine._pool.get_stats()
    assert stats.get("returns_bad", 0) + stats.get("connections_lost", 0) >= 1  # discarded
    for i in range(6):  # more calls than the pool holds: every connection answers
        db.facts.index(Fact(content=f"after {i}"))
    assert db.history.append("s", _msg("next")) == 2  # a new connection, seqs gap-free
    assert db.facts.count() == 6
    _clean(db, server.dsn)
