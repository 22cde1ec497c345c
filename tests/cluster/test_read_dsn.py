"""`read_dsn=`: reads and searches from the standby, and how stale they may be.

The standby's replay is paused (`pg_wal_replay_pause()`) to make the lag certain: a write
acknowledged by the primary (its WAL already on the synchronous standby, not yet applied)
is missing from a read through `read_dsn` until replay catches up; inside `atomic()` the
same read goes to the primary and sees it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest
from pgcluster import AutoFailoverCluster
from pgserver import new_agent_id

import sqlmem.postgres as sp
from sqlmem import Fact, Message


@pytest.fixture
def paused_standby(cluster: AutoFailoverCluster) -> Iterator[psycopg.Connection[object]]:
    standby = cluster.role("secondary")
    conn = psycopg.connect(cluster.node_dsn(standby), autocommit=True)
    try:
        yield conn
    finally:
        conn.execute("SELECT pg_wal_replay_resume()")
        conn.close()


def _eventually(check: object, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the standby never caught up"
        time.sleep(0.05)


def test_reads_from_the_standby_lag_until_replay_catches_up(
    cluster: AutoFailoverCluster, paused_standby: psycopg.Connection[object]
) -> None:
    standby = cluster.role("secondary")
    with sp.PostgresBackend(cluster.dsn(), read_dsn=cluster.node_dsn(standby)) as backend:
        db = backend.open(new_agent_id())
        db.history.append("s", Message(role="user", content="before"))
        db.facts.index(Fact(id="f1", content="the sky is blue"))
        _eventually(lambda: db.history.count("s") == 1 and db.facts.get("f1") is not None)

        paused_standby.execute("SELECT pg_wal_replay_pause()")
        assert db.history.append("s", Message(role="user", content="after")) == 2
        db.facts.index(Fact(id="f2", content="the grass is green"))

        # Through read_dsn: the standby has not applied them yet.
        assert [m.content for m in db.history.get_all("s")] == ["before"]
        assert db.facts.search("grass") == []
        assert db.facts.get("f2") is None
        # Inside atomic(): every read goes to the primary, and sees them.
        with db.atomic():
            assert [m.content for m in db.history.get_all("s")] == ["before", "after"]
            assert [f.id for f in db.facts.search("grass")] == ["f2"]

        paused_standby.execute("SELECT pg_wal_replay_resume()")
        _eventually(lambda: [m.content for m in db.history.get_all("s")] == ["before", "after"])
        assert [f.id for f in db.facts.search("grass")] == ["f2"]


def test_without_read_dsn_reads_are_the_primarys(
    cluster: AutoFailoverCluster, paused_standby: psycopg.Connection[object]
) -> None:
    paused_standby.execute("SELECT pg_wal_replay_pause()")
    with sp.open(cluster.dsn(), new_agent_id()) as db:
        db.history.append("s", Message(role="user", content="now"))
        assert [m.content for m in db.history.get_all("s")] == ["now"]
