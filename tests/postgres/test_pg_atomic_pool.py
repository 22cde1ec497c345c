"""A thread inside `atomic()` that also calls other agents of the same backend uses the
block's connection for them: N such threads never exhaust a pool of N.

Regression: each block pinned one pooled connection and each call to a second agent took
another, so N threads inside blocks at once held all N connections and each waited for one
more: every call in the process waited out the busy timeout (`StorageBusyError`).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pgserver import new_agent_id

from sqlmem import Fact, Message, StoreConfig
from sqlmem import postgres as sp

THREADS = 4


def test_n_threads_in_atomic_touching_a_second_agent_share_a_pool_of_n(pg_dsn: str) -> None:
    config = StoreConfig(busy_timeout_ms=3000)
    with sp.PostgresBackend(pg_dsn, pool_size=THREADS) as backend:
        own = [backend.open(new_agent_id(), config) for _ in range(THREADS)]
        shared = backend.open(new_agent_id(), config)
        inside = threading.Barrier(THREADS, timeout=30)
        errors: list[BaseException] = []

        def work(n: int) -> None:
            try:
                with own[n].atomic():
                    own[n].history.append("s", Message(role="user", content=f"thread {n}"))
                    inside.wait()  # every thread holds its block's connection now
                    shared.facts.index(Fact(id=f"from-{n}", content=f"written by {n}"))
                    assert shared.facts.get(f"from-{n}") is not None  # sees its own write
                    own[n].facts.index(Fact(content=f"own fact {n}"))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert sorted(f.id for f in shared.facts.list(limit=10)) == [
            f"from-{n}" for n in range(THREADS)
        ]
        assert all(db.facts.count() == 1 and db.history.count("s") == 1 for db in own)
        (pool,) = backend._pools._pools.values()
        assert pool.get_stats()["pool_size"] <= THREADS


def test_the_second_agents_writes_join_the_block(pg_backend: Any) -> None:
    """They ran on the block's connection, so they commit or roll back with it."""
    first, second = pg_backend.open(new_agent_id()), pg_backend.open(new_agent_id())
    try:
        with pytest.raises(RuntimeError), first.atomic():
            first.facts.index(Fact(id="a", content="first"))
            second.facts.index(Fact(id="b", content="second"))
            with second.atomic():  # a savepoint of the same transaction
                second.history.append("s", Message(role="user", content="hello"))
            raise RuntimeError("roll back")
        assert first.facts.count() == 0 and second.facts.count() == 0
        assert second.history.count("s") == 0
        with first.atomic():
            second.facts.index(Fact(id="b", content="second"))
        assert second.facts.get("b") is not None
    finally:
        first.close()
        second.close()


def test_agents_of_another_busy_timeout_keep_their_own_connection(pg_backend: Any) -> None:
    """Another busy timeout is another pool (the timeouts are connection settings): its
    calls do not join the block, and commit on their own."""
    first = pg_backend.open(new_agent_id())
    other = pg_backend.open(new_agent_id(), StoreConfig(busy_timeout_ms=1234))
    try:
        with pytest.raises(RuntimeError), first.atomic():
            other.facts.index(Fact(id="kept", content="committed on its own"))
            raise RuntimeError("roll back")
        assert other.facts.get("kept") is not None
    finally:
        first.close()
        other.close()
