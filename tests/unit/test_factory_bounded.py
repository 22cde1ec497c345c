"""MemoryFactory's `max_open`: least recently used idle databases are suspended, their
handles keep working (reopening on use), and file descriptors stay bounded."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sqlmem.errors import StoreClosedError
from sqlmem.factory import MemoryFactory
from sqlmem.records import Fact, Message
from sqlmem.sqlite.db import MemoryDB

PROC_FD = Path("/proc/self/fd")


def _open_fds() -> int:
    return len(os.listdir(PROC_FD))


@pytest.fixture
def factory(tmp_path: Path) -> Iterator[MemoryFactory]:
    with MemoryFactory(tmp_path, max_open=2) as made:
        yield made


def _resolve(factory: MemoryFactory, agent_id: str) -> MemoryDB:
    db = factory.resolve(agent_id)
    assert db is not None
    return db


def _touch(db: MemoryDB) -> None:
    """Use the database, making it the most recently used (and reopening it if needed)."""
    db.facts.count()
    time.sleep(0.002)  # keep monotonic timestamps strictly ordered on coarse clocks


def test_least_recently_used_idle_database_is_suspended(factory: MemoryFactory) -> None:
    a = _resolve(factory, "a")
    _touch(a)
    b = _resolve(factory, "b")
    _touch(b)
    _touch(a)  # now b is the least recently used
    c = _resolve(factory, "c")
    assert a._engine.is_open and c._engine.is_open
    assert not b._engine.is_open
    assert factory.open_count == 2


def test_evicted_handle_reopens_and_the_bound_holds_again(factory: MemoryFactory) -> None:
    a = _resolve(factory, "a")
    a.facts.index(Fact(content="alpha fact"))
    a.history.append("s", Message(role="user", content="alpha message"))
    time.sleep(0.002)
    b = _resolve(factory, "b")
    _touch(b)
    c = _resolve(factory, "c")
    assert not a._engine.is_open  # a was least recently used
    # The old handle (and its stores) still work: the engine reopens transparently ...
    assert [f.content for f in a.facts.search("alpha")] == ["alpha fact"]
    assert [m.content for m in a.history.get_all("s")] == ["alpha message"]
    # ... and the factory suspended the least recently used other one (b).
    assert a._engine.is_open and not b._engine.is_open and c._engine.is_open
    assert factory.open_count == 2
    assert factory.resolve("a") is a


def test_a_database_in_use_is_never_suspended(factory: MemoryFactory) -> None:
    a = _resolve(factory, "a")
    b = _resolve(factory, "b")
    _touch(b)
    inside, leave = threading.Event(), threading.Event()

    def hold_a_read() -> None:
        with a._engine.read():
            inside.set()
            leave.wait(10)

    holder = threading.Thread(target=hold_a_read)
    holder.start()
    try:
        assert inside.wait(10)
        _touch(b)  # a is now least recently used, but busy
        _resolve(factory, "c")
        assert a._engine.is_open, "a database in use was suspended under its caller"
        assert not b._engine.is_open
    finally:
        leave.set()
        holder.join(10)


def test_max_open_one(tmp_path: Path) -> None:
    with MemoryFactory(tmp_path, max_open=1) as factory:
        dbs = [_resolve(factory, f"agent{i}") for i in range(5)]
        for round_ in range(2):
            for i, db in enumerate(dbs):
                db.facts.index(Fact(id=f"f{i}", content=f"round {round_} of agent{i}"))
                assert factory.open_count == 1
        for i, db in enumerate(dbs):
            assert db.facts.count() == 1
            assert db.facts.get(f"f{i}") is not None


def test_evicted_handle_after_close_raises_instead_of_reopening(factory: MemoryFactory) -> None:
    a = _resolve(factory, "a")
    time.sleep(0.002)
    _resolve(factory, "b")
    _resolve(factory, "c")
    assert not a._engine.is_open
    factory.close()
    with pytest.raises(StoreClosedError):
        a.facts.count()
    assert not a._engine.is_open


def test_concurrent_use_of_many_agents_stays_bounded(tmp_path: Path) -> None:
    """Threads using more agents than max_open: no error, and the bound holds at rest."""
    with MemoryFactory(tmp_path, max_open=8) as factory:
        errors: list[BaseException] = []

        def worker(n: int) -> None:
            try:
                for i in range(60):
                    db = _resolve(factory, f"agent{(n * 7 + i) % 40}")
                    db.facts.index(Fact(id=f"t{n}-{i}", content=f"thread {n} step {i}"))
                    db.facts.search("thread")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        # Busy databases may exceed the bound for a moment; one more open restores it.
        _resolve(factory, "late").facts.count()
        assert factory.open_count <= 8
        total = sum(_resolve(factory, f"agent{i}").facts.count() for i in range(40))
        assert total == 8 * 60


@pytest.mark.skipif(not PROC_FD.is_dir(), reason="needs /proc/self/fd")
@pytest.mark.parametrize(
    ("agents", "max_open"),
    [
        pytest.param(100, 10, id="100-agents"),
        # ~25 ms per agent here, nearly all of it SQLite's fsyncs (a new file switching to WAL,
        # its first WAL frame, an evicted one checkpointing on close), not the factory.
        pytest.param(2000, 64, id="2000-agents", marks=pytest.mark.slow),
    ],
)
def test_file_descriptors_stay_bounded(tmp_path: Path, agents: int, max_open: int) -> None:
    baseline = _open_fds()
    peak = baseline
    began = time.monotonic()
    with MemoryFactory(tmp_path, max_open=max_open) as factory:
        first = _resolve(factory, "agent-0")
        for i in range(agents):
            db = _resolve(factory, f"agent-{i}")
            db.history.append("chat", Message(role="user", content=f"hello from agent {i}"))
            db.facts.index(Fact(id="name", content=f"my number is {i}"))
            assert len(db.facts.search("number")) == 1  # opens a reader connection too
            peak = max(peak, _open_fds())
        elapsed = time.monotonic() - began
        assert factory.open_count <= max_open
        # Per open database: the writer and one reader connection each hold the database
        # file and its WAL, and they share one -shm descriptor: 5, plus some slack.
        bound = baseline + max_open * 5 + 16
        assert peak <= bound, f"{peak} descriptors open (baseline {baseline}, bound {bound})"
        # The earliest handle was suspended long ago; it reopens and reads its data back.
        assert not first._engine.is_open
        assert [m.content for m in first.history.get_all("chat")] == ["hello from agent 0"]
        fact = first.facts.get("name")
        assert fact is not None and fact.content == "my number is 0"
        assert [f.id for f in first.facts.search("number")] == ["name"]
        assert factory.open_count <= max_open
    assert _open_fds() <= baseline
    print(
        f"\n{agents} agents, max_open={max_open}: {elapsed:.1f}s, fds baseline={baseline} "
        f"peak={peak} (+{peak - baseline}, bound +{bound - baseline})"
    )
