"""The engine: pragmas, file modes, the writer's transactions, readers, maintenance,
and errors at the boundary (no apsw exception leaves the package)."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

import sqlmem
from sqlmem import Fact, Message


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("synchronous", ["NORMAL", "FULL"])
def test_pragmas_on_writer_and_readers(
    open_db: Callable[..., sqlmem.MemoryDB], synchronous: str
) -> None:
    db = open_db(synchronous=synchronous, busy_timeout_ms=1234)
    expected_sync = {"NORMAL": 1, "FULL": 2}[synchronous]
    engine = db._engine

    def check(conn: apsw.Connection) -> None:
        assert conn.pragma("journal_mode") == "wal"
        assert conn.pragma("synchronous") == expected_sync
        assert conn.pragma("foreign_keys") == 1
        assert conn.pragma("busy_timeout") == 1234
        assert conn.pragma("recursive_triggers") == 1
        assert conn.pragma("trusted_schema") == 0

    with engine.write() as writer:
        check(writer)
        # Inside its own write transaction a thread reads on the writer (SPEC 20: reads
        # inside `atomic()` see its writes); a reader is the pooled, query-only connection.
        with engine.read() as inside:
            assert inside is writer
    with engine.read() as reader:
        check(reader)
        assert reader.pragma("query_only") == 1


def test_reader_in_another_thread_has_its_own_connection(db: sqlmem.MemoryDB) -> None:
    seen: list[int] = []

    def read() -> None:
        with db._engine.read() as conn:
            seen.append(id(conn))

    with db._engine.read() as mine:
        thread = threading.Thread(target=read)
        thread.start()
        thread.join()
        assert seen and seen[0] != id(mine)


def test_file_and_folder_modes(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = tmp_path / "a" / "b" / "memory.db"
        with sqlmem.open(path) as db:
            db.history.append("s", Message(role="user", content="x"))
            assert _mode(path) == 0o600
            assert _mode(Path(f"{path}-wal")) == 0o600
            assert _mode(Path(f"{path}-shm")) == 0o600
        assert _mode(tmp_path / "a") == 0o700
        assert _mode(tmp_path / "a" / "b") == 0o700
    finally:
        os.umask(old)


def test_memory_path_is_refused(tmp_path: Path) -> None:
    # The SQLite backend needs a file; since 0.3 `sqlmem.open(":memory:")` opens the
    # in-memory database instead (tests/contract/test_database_contract.py).
    with pytest.raises(sqlmem.InvalidArgumentError, match="memory"):
        sqlmem.MemoryDB(":memory:")
    with pytest.raises(sqlmem.InvalidArgumentError):
        sqlmem.open("")


def test_config_errors_name_the_field() -> None:
    with pytest.raises(sqlmem.InvalidArgumentError, match="busy_timeout_ms"):
        sqlmem.StoreConfig(busy_timeout_ms=-1)
    with pytest.raises(sqlmem.InvalidArgumentError, match="synchronous"):
        sqlmem.StoreConfig(synchronous="OFF")
    with pytest.raises(sqlmem.InvalidArgumentError, match="max_history_len"):
        sqlmem.StoreConfig(max_history_len=0)
    with pytest.raises(sqlmem.InvalidArgumentError, match="tokenizer"):
        sqlmem.StoreConfig(tokenizer="icu zh")
    with pytest.raises(sqlmem.InvalidArgumentError, match="nonsense"):
        sqlmem.StoreConfig(nonsense=1)
    with pytest.raises(sqlmem.InvalidArgumentError, match="config"):
        sqlmem.open("x.db", {"wal": True})  # type: ignore[arg-type]


def test_write_rolls_back_on_any_exception(db: sqlmem.MemoryDB) -> None:
    class Boom(Exception):
        pass

    with pytest.raises(Boom), db._engine.write() as conn:
        conn.execute(
            "INSERT INTO facts(id, content, created_at, updated_at) VALUES ('x', 'y', 1, 1)"
        )
        raise Boom
    assert db.facts.get("x") is None


def test_nested_writes_become_savepoints(db: sqlmem.MemoryDB) -> None:
    insert = "INSERT INTO facts(id, content, created_at, updated_at) VALUES (?, 'c', 1, 1)"
    with db._engine.write() as outer:
        outer.execute(insert, ("kept",))
        with pytest.raises(ValueError), db._engine.write() as inner:
            inner.execute(insert, ("undone",))
            raise ValueError("inner fails")
        with db._engine.write() as inner:
            inner.execute(insert, ("also kept",))
    assert db.facts.get("kept") is not None
    assert db.facts.get("also kept") is not None
    assert db.facts.get("undone") is None


def test_busy_past_timeout_raises_storage_busy(open_db: Callable[..., sqlmem.MemoryDB]) -> None:
    db = open_db(busy_timeout_ms=100)
    other = apsw.Connection(str(db.path))
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(sqlmem.StorageBusyError) as info:
            db.facts.index(Fact(content="blocked"))
        assert isinstance(info.value.__cause__, apsw.BusyError)
    finally:
        other.execute("ROLLBACK")
        other.close()
    db.facts.index(Fact(content="works again"))
    assert db.facts.count() == 1


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(os.urandom(8192))
    before = path.read_bytes()
    with pytest.raises(sqlmem.CorruptDatabaseError, match=str(path)) as info:
        sqlmem.open(path)
    assert isinstance(info.value.__cause__, apsw.Error)
    assert path.read_bytes() == before


def test_closed_database_refuses_every_call(db_path: Path) -> None:
    db = sqlmem.open(db_path)
    db.facts.index(Fact(id="f", content="hello"))
    db.close()
    db.close()  # idempotent
    calls: list[Callable[[], object]] = [
        db.stats,
        db.check,
        db.checkpoint,
        db.vacuum,
        lambda: db.backup(db_path.with_name("copy.db")),
        lambda: db.history.append("s", Message(role="user", content="x")),
        lambda: db.history.get_recent("s", 5),
        lambda: db.history.search("hello"),
        lambda: db.facts.index(Fact(content="x")),
        lambda: db.facts.get("f"),
        lambda: db.facts.search("hello"),
        db.facts.count,
    ]
    for call in calls:
        with pytest.raises(sqlmem.StoreClosedError):
            call()


def test_stats_and_check_on_a_healthy_file(db: sqlmem.MemoryDB) -> None:
    db.history.append("s", Message(role="user", content="hello"))
    db.facts.index(Fact(content="a fact"))
    stats = db.stats()
    assert stats["messages_active"] == 1
    assert stats["facts"] == 1
    assert stats["sessions"] == 1
    assert stats["file_bytes"] > 0
    report = db.check()
    assert report.ok, report.problems


def test_check_reports_a_desynchronised_fts_index(db: sqlmem.MemoryDB) -> None:
    db.facts.index(Fact(id="f", content="original words"))
    # Another client changes content behind the triggers' back (drop, write, recreate).
    with db._engine.write() as conn:
        conn.execute("DROP TRIGGER facts_update_text")
        conn.execute("UPDATE facts SET content = 'other words' WHERE id = 'f'")
    report = db.check()
    assert not report.ok
    assert any("facts_fts" in p for p in report.problems)


def test_checkpoint_truncates_the_wal(db: sqlmem.MemoryDB) -> None:
    db.facts.index_many([Fact(content=f"fact {i}") for i in range(200)])
    assert db.stats()["wal_bytes"] > 0
    db.checkpoint()
    assert db.stats()["wal_bytes"] == 0


def test_backup_while_another_thread_writes_is_consistent(
    db: sqlmem.MemoryDB, tmp_path: Path
) -> None:
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set():
            db.history.append("s", Message(role="user", content=f"message {i}"))
            i += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        while db.history.count("s") < 50:
            pass
        copies = [db.backup(tmp_path / f"copy{i}.db") for i in range(3)]
    finally:
        stop.set()
        writer.join()
    for copy in copies:
        assert _mode(copy) == 0o600
        with sqlmem.open(copy) as restored:
            assert restored.check().ok
            messages = restored.history.get_all("s")
            assert [m.seq for m in messages] == list(range(1, len(messages) + 1))
            assert len(messages) >= 50
        conn = sqlite3.connect(copy)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        conn.close()


def test_vacuum_leaves_no_deleted_text(db: sqlmem.MemoryDB) -> None:
    secret = "zebracornsecret"
    db.facts.index(Fact(id="s", content=f"the password is {secret}"))
    db.history.append("chat", Message(role="user", content=f"remember {secret}"))
    db.checkpoint()
    db.facts.delete("s")
    db.history.purge("chat")
    db.vacuum()
    for suffix in ("", "-wal"):
        file = Path(f"{db.path}{suffix}")
        if file.exists():
            assert secret.encode() not in file.read_bytes()
    assert db.check().ok


def test_check_reports_damaged_pages_instead_of_raising(db_path: Path) -> None:
    with sqlmem.open(db_path) as db:
        db.facts.index_many([Fact(content=f"fact number {i} " + "x" * 300) for i in range(300)])
        db.checkpoint()
        page_size = db.stats()["page_size"]
        pages = db.stats()["page_count"]
    data = bytearray(db_path.read_bytes())
    start = (pages - 3) * page_size  # a page near the end: facts or their index
    data[start : start + page_size] = os.urandom(page_size)
    db_path.write_bytes(bytes(data))
    with sqlmem.open(db_path) as db:
        report = db.check()
    assert not report.ok
    assert report.problems
