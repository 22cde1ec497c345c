"""sqlmem behind PgBouncer in transaction pooling mode (1.18: no prepared statements).

A thousand agents through twenty server connections, the busy timeout still holding
(set per transaction, since no session setting survives a transaction there), and no
state left on the server connections other clients get next.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from pgcluster import PgBouncer
from pgserver import PgServer, new_agent_id

import sqlmem
import sqlmem.postgres as sp
from sqlmem import Fact, InvalidArgumentError, Message, StorageBusyError

AGENTS, BACKENDS, THREADS = 1000, 10, 40


def test_without_transaction_pooler_the_error_says_what_to_pass(bouncer: PgBouncer) -> None:
    with pytest.raises(InvalidArgumentError, match=r"transaction_pooler=True"):
        sp.open(bouncer.dsn, new_agent_id())


def _one_agent(backend: sp.PostgresBackend, agent: str) -> None:
    db = backend.open(agent)
    try:
        for i in range(3):
            seq = db.history.append("s", Message(role="user", content=f"{agent} says {i}"))
            assert seq == i + 1
        db.facts.remember(Fact(content=f"{agent} likes tea", tags=["drink"]))
        db.docs.write("notes.md", f"# {agent}\n")
        db.docs.edit("notes.md", f"# {agent}", f"# {agent}\nedited")
        assert [m.content for m in db.history.get_recent("s", 2)] == [
            f"{agent} says 1",
            f"{agent} says 2",
        ]
        assert [f.content for f in db.facts.search("tea")] == [f"{agent} likes tea"]
        assert [h.path for h in db.docs.search("edited")] == ["notes.md"]
    finally:
        db.close()


def test_a_thousand_agents_through_twenty_server_connections(
    bouncer: PgBouncer, single_server: PgServer
) -> None:
    backends = [
        sp.PostgresBackend(bouncer.dsn, pool_size=8, transaction_pooler=True)
        for _ in range(BACKENDS)
    ]
    most_servers, most_clients, stop = [0], [0], threading.Event()

    def watch() -> None:  # the bouncer's own view of its connections, sampled
        while not stop.is_set():
            pools = [p for p in bouncer.show("POOLS") if p["database"] == "sqlmem"]
            servers = sum(int(str(p["sv_active"])) + int(str(p["sv_idle"])) for p in pools)
            clients = sum(int(str(p["cl_active"])) + int(str(p["cl_waiting"])) for p in pools)
            most_servers[0] = max(most_servers[0], servers)
            most_clients[0] = max(most_clients[0], clients)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    agents = [new_agent_id() for _ in range(AGENTS)]
    try:
        with ThreadPoolExecutor(THREADS) as pool:
            list(pool.map(lambda n: _one_agent(backends[n % BACKENDS], agents[n]), range(AGENTS)))
    finally:
        stop.set()
        watcher.join()
        for backend in backends:
            backend.close()
    assert 0 < most_servers[0] <= bouncer.pool_size
    assert most_clients[0] > bouncer.pool_size  # many clients shared the few servers
    with psycopg.connect(single_server.dsn) as conn:  # straight to the server
        row = conn.execute(
            "SELECT count(DISTINCT agent_id) FROM messages WHERE agent_id = ANY(%s)", (agents,)
        ).fetchone()
    assert row == (AGENTS,)


def _plain(bouncer: PgBouncer) -> psycopg.Connection[Any]:
    return psycopg.connect(bouncer.dsn, autocommit=True, prepare_threshold=None)


def test_no_session_state_is_left_on_the_server_connections(bouncer: PgBouncer) -> None:
    with sp.PostgresBackend(bouncer.dsn, pool_size=4, transaction_pooler=True) as backend:
        db = backend.open(new_agent_id(), sqlmem.StoreConfig(busy_timeout_ms=700))
        for i in range(20):  # past psycopg's prepare threshold (5) on every connection
            db.history.append("s", Message(role="user", content=f"m{i}"))
            db.history.get_recent("s", 3)
            db.facts.search("m1")
    for _ in range(30):  # whichever server connection the bouncer lends next
        with _plain(bouncer) as conn:
            settings = conn.execute(
                "SELECT current_setting('lock_timeout'), current_setting('statement_timeout'),"
                " (SELECT count(*) FROM pg_prepared_statements)"
            ).fetchone()
        assert settings == ("0", "0", 0)


def test_the_busy_timeout_holds_behind_the_pooler(bouncer: PgBouncer) -> None:
    agent = new_agent_id()
    config = sqlmem.StoreConfig(busy_timeout_ms=300)
    with sp.open(bouncer.dsn, agent, config, transaction_pooler=True) as db:
        db.history.append("s", Message(role="user", content="first"))
        with _plain(bouncer) as holder, holder.transaction():
            # Ends itself if the append waited for it instead of giving up (a test that fails,
            # not one that hangs).
            holder.execute("SET LOCAL idle_in_transaction_session_timeout = '10s'")
            holder.execute(  # another writer holding the session's counter row
                "SELECT 1 FROM sessions WHERE agent_id = %s FOR UPDATE", (agent,)
            )
            with pytest.raises(StorageBusyError, match=r"lock|statement timeout"):
                db.history.append("s", Message(role="user", content="waits"))
        assert db.history.append("s", Message(role="user", content="second")) == 2
