"""MemoryFactory limits: `max_open` holds once calls finish (issue 23 item 15), and agents'
files never leave `data_dir` through a symlink (issue 23 item 19)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

import sqlmem
from sqlmem import MemoryFactory, Message
from sqlmem.sqlite.db import MemoryDB


def _resolve(factory: MemoryFactory, agent_id: str) -> MemoryDB:
    db = factory.resolve(agent_id)
    assert db is not None
    return db


# -- item 15 ----------------------------------------------------------------------------


@pytest.fixture
def one_open(tmp_path: Path) -> Iterator[MemoryFactory]:
    with MemoryFactory(tmp_path / "data", max_open=1) as made:
        yield made


def test_a_database_busy_during_eviction_is_suspended_when_its_call_ends(
    one_open: MemoryFactory,
) -> None:
    """Regression (issue 23 item 15): the bound was enforced only when a database opened;
    one busy at that moment stayed open for good once its call finished."""
    busy = _resolve(one_open, "busy")
    path = busy.path
    busy.history.append("s", Message(role="user", content="first"))
    # Another process holds the file's write lock, so the next append waits inside its call.
    blocker = apsw.Connection(str(path))
    blocker.execute("BEGIN IMMEDIATE")
    appended = threading.Event()
    thread = threading.Thread(
        target=lambda: (
            busy.history.append("s", Message(role="user", content="waited")),
            appended.set(),
        )
    )
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while busy._engine._active == 0:  # wait until the append is inside its call
            assert time.monotonic() < deadline
            time.sleep(0.001)
        _resolve(one_open, "other")  # opens; "busy" cannot be suspended now
        assert one_open.open_count == 2
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        thread.join()
    assert appended.is_set()
    assert one_open.open_count == 1  # the bound holds again once the call ended
    assert busy.history.count("s") == 2


def test_many_threads_leave_at_most_max_open_databases_open(one_open: MemoryFactory) -> None:
    """Regression (issue 23 item 15): max_open=1 and 16 threads left 7-8 databases open."""
    barrier = threading.Barrier(16)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            db = _resolve(one_open, f"agent-{n}")
            barrier.wait()
            for i in range(5):
                db.history.append("s", Message(role="user", content=f"{n} {i}"))
                db.history.get_recent("s", 5)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert one_open.open_count <= 1
    for n in range(16):  # every handle still works (reopening on use)
        assert _resolve(one_open, f"agent-{n}").history.count("s") == 5
    assert one_open.open_count <= 1


# -- item 19 ----------------------------------------------------------------------------


def _files(root: Path) -> set[Path]:
    return set(root.rglob("*"))


@pytest.mark.parametrize("link", ["agents", "agents/a1", "agents/a1/memory.db"])
def test_a_symlink_below_data_dir_is_refused_before_anything_is_created(
    tmp_path: Path, link: str
) -> None:
    """Regression (issue 23 item 19): links inside data_dir were followed, and the factory
    created an agent's memory outside data_dir."""
    data, outside = tmp_path / "data", tmp_path / "outside"
    outside.mkdir()
    (data / link).parent.mkdir(parents=True, exist_ok=True)
    (data / link).symlink_to(outside / "target" if link.endswith(".db") else outside)
    before = _files(tmp_path)
    with MemoryFactory(data) as factory:
        with pytest.raises(sqlmem.InvalidArgumentError, match="symbolic link"):
            factory.resolve("a1")
        with pytest.raises(sqlmem.InvalidArgumentError):  # not cached: refused again
            factory.resolve("a1")
    assert _files(tmp_path) == before


def test_a_stale_wal_link_below_data_dir_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "agents" / "a1").mkdir(parents=True)
    (data / "agents" / "a1" / "memory.db-wal").symlink_to(tmp_path / "elsewhere-wal")
    with (
        MemoryFactory(data) as factory,
        pytest.raises(sqlmem.InvalidArgumentError, match="symbolic link"),
    ):
        factory.resolve("a1")
    assert not (tmp_path / "elsewhere-wal").exists()


def test_a_symlinked_data_dir_and_an_agents_own_folder_are_the_users_choice(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "data").symlink_to(real)
    own = tmp_path / "own-target"
    own.mkdir()
    (tmp_path / "own").symlink_to(own)
    agents = {
        "a1": sqlmem.AgentMemoryConfig(),
        "a2": sqlmem.AgentMemoryConfig(data_dir=tmp_path / "own"),
    }
    with MemoryFactory(tmp_path / "data", agents=agents) as factory:
        _resolve(factory, "a1").history.append("s", Message(role="user", content="hi"))
        _resolve(factory, "a2").history.append("s", Message(role="user", content="hi"))
    assert (real / "agents" / "a1" / "memory.db").is_file()
    assert (own / "memory.db").is_file()
