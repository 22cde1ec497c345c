"""The PostgreSQL backend's own promises (SPEC 19, issue 21): opening and closing, the
factory over a shared database, agent isolation, migrations' ledger, errors mapped."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
from pgserver import new_agent_id

import sqlmem.postgres as sp
from sqlmem.errors import (
    InvalidAgentIdError,
    InvalidArgumentError,
    MigrationChecksumError,
    SchemaTooNewError,
    StorageBusyError,
    StoreClosedError,
)
from sqlmem.factory import AgentMemoryConfig, MemoryFactory
from sqlmem.postgres import codec
from sqlmem.postgres.migrations import load_migrations
from sqlmem.records import Fact, Message


def test_open_round_trips_and_closes(pg_dsn: str) -> None:
    agent = new_agent_id()
    text = "nul \x00 inside, \ue000 marker, \\0 backslash, 跑步 😀"
    with sp.open(pg_dsn, agent) as db:
        assert db.history.append(text, Message(role="user", content=text, name=text)) == 1
        db.history.set_summary(text, text)
        db.facts.index(Fact(id=text, content=text, source=text, tags=[text, "b"],
                            metadata={text: [text, 2**63 - 1, 1.5, None]}))  # fmt: skip
    with sp.open(pg_dsn, agent) as db:  # a new pool: everything came from the server
        (msg,) = db.history.get_all(text)
        assert (msg.content, msg.name, msg.session_id) == (text, text, text)
        assert db.history.get_summary(text) == text and db.history.sessions() == [text]
        fact = db.facts.get(text)
        assert fact is not None and fact.source == text and fact.tags == [text, "b"]
        assert fact.metadata == {text: [text, 2**63 - 1, 1.5, None]}
        assert db.facts.search_by_metadata(text, [text, 2**63 - 1, 1.5, None]) == [fact]
        assert db.facts.list(tags=[text], source=text) == [fact]
        assert db.facts.tags() == {"b": 1, text: 1}
    assert db.closed
    with pytest.raises(StoreClosedError):
        db.history.count(text)
    with pytest.raises(StoreClosedError):
        db.facts.search("x")


@pytest.mark.parametrize("value", ["", "a\x00b", "\ue000", "\ue000\\0", "\\", "\x00\x00\\\\0"])
def test_codec_is_reversible_and_leaves_plain_text_alone(value: str) -> None:
    assert codec.decode(codec.encode(value)) == value
    assert "\x00" not in codec.encode(value)
    assert codec.encode("plain text") == "plain text"


def test_bad_arguments_raise_sqlmem_errors(pg_dsn: str) -> None:
    for bad in ["", "../x", "a/b", ".hidden", "x" * 129]:
        with pytest.raises(InvalidAgentIdError):
            sp.open(pg_dsn, bad)
    with pytest.raises(InvalidArgumentError):
        sp.open("not_an_option=1", "a")
    with pytest.raises(InvalidArgumentError):
        sp.PostgresBackend(pg_dsn, pool_size=0)
    with pytest.raises(InvalidArgumentError):
        sp.open(pg_dsn, "a", embedder=object())


def test_unreachable_server_is_a_clear_sqlmem_error(tmp_path: Any) -> None:
    with pytest.raises(StorageBusyError, match="database unavailable") as info:
        sp.open(f"host={tmp_path} port=1 user=x dbname=x", "a")
    assert isinstance(info.value.__cause__, psycopg.Error)


def test_factory_resolves_agents_to_rows_of_one_database(pg_backend: Any) -> None:
    a, b, off = new_agent_id(), new_agent_id(), new_agent_id()
    agents = {a: AgentMemoryConfig(), b: AgentMemoryConfig(), off: AgentMemoryConfig(enabled=False)}
    with MemoryFactory(None, agents=agents, backend=pg_backend) as factory:
        db_a = factory.resolve(a)
        assert db_a is not None and factory.resolve(a) is db_a
        assert factory.resolve(off) is None and factory.resolve(new_agent_id()) is None
        history_b, facts_b = factory.resolve_history(b), factory.resolve_facts(b)
        assert history_b is not None and facts_b is not None
        db_a.history.append("s", Message(role="user", content="only a"))
        db_a.facts.index(Fact(id="same", content="only a's fact"))
        facts_b.index(Fact(id="same", content="b's own"))
        assert history_b.count("s") == 0 and history_b.sessions() == []
        assert facts_b.search("only") == [] and facts_b.count() == 1
        assert [f.content for f in db_a.facts.search("fact")] == ["only a's fact"]
        with pytest.raises(InvalidAgentIdError):
            factory.resolve("../escape")
    with pytest.raises(StoreClosedError):
        db_a.history.count("s")
    with pytest.raises(StoreClosedError):
        factory.resolve(a)
    assert not pg_backend.closed  # the backend belongs to its creator


def test_closing_the_backend_closes_its_databases(pg_dsn: str) -> None:
    with sp.PostgresBackend(pg_dsn, pool_size=1) as backend:
        db = backend.open(new_agent_id())
        db.history.append("s", Message(role="user", content="x"))
    assert backend.closed and db.closed
    with pytest.raises(StoreClosedError):
        db.history.count("s")
    with pytest.raises(StoreClosedError):
        backend.open(new_agent_id())


def test_threads_share_a_bounded_pool(pg_dsn: str) -> None:
    backend = sp.PostgresBackend(pg_dsn, pool_size=2)
    try:
        db = backend.open(new_agent_id())
        errors: list[BaseException] = []

        def work(n: int) -> None:
            try:
                for i in range(15):
                    db.history.append("shared", Message(role="user", content=f"t{n} m{i}"))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert [m.seq for m in db.history.get_all("shared")] == list(range(1, 91))
        (pool,) = backend._pools._pools.values()  # one busy timeout: one pool
        assert pool.get_stats()["pool_size"] <= 2
    finally:
        backend.close()


# -- migrations ---------------------------------------------------------------------------


@pytest.fixture
def fresh_db(pg_dsn: str) -> Any:
    """A new database on the server: DSN of it, dropped afterwards."""
    name = "m_" + new_agent_id().replace("-", "_")
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    dsn = psycopg.conninfo.make_conninfo(pg_dsn, dbname=name)
    yield dsn
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def _ledger(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return list(conn.execute("SELECT version, name, sha256 FROM sqlmem_schema_version"))


def test_many_servers_starting_together_apply_each_migration_once(fresh_db: str) -> None:
    opened: list[Any] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def start() -> None:
        barrier.wait()
        try:
            opened.append(sp.open(fresh_db, new_agent_id(), pool_size=1))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for db in opened:
        db.close()
    assert errors == [] and len(opened) == 6
    plan = load_migrations()
    assert _ledger(fresh_db) == [(m.version, m.name, m.sha256) for m in plan]


def test_schema_too_new_and_edited_migrations_are_refused(fresh_db: str) -> None:
    sp.open(fresh_db, "a").close()
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        conn.execute("UPDATE sqlmem_schema_version SET sha256 = 'edited' WHERE version = 1")
    with pytest.raises(MigrationChecksumError):
        sp.open(fresh_db, "a")
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        conn.execute(
            "UPDATE sqlmem_schema_version SET sha256 = %s WHERE version = 1",
            (load_migrations()[0].sha256,),
        )
        conn.execute(
            "INSERT INTO sqlmem_schema_version(version, name, sha256) VALUES (%s, 'future', 'x')",
            (len(load_migrations()) + 1,),
        )
    with pytest.raises(SchemaTooNewError):
        sp.open(fresh_db, "a")
