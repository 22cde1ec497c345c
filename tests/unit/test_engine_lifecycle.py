"""Regressions from the review of the engine's life cycle: close and check under a busy
writer, reopen of a vanished file, fork, aliased backup paths, config and record edges."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import apsw
import pytest

import sqlmem
from sqlmem import Fact, Message


def test_close_never_raises_or_waits_while_another_writer_holds_the_lock(
    open_db: Callable[..., sqlmem.MemoryDB],
) -> None:
    """Regression: close() ran PRAGMA optimize under the busy timeout and raised
    StorageBusyError (hiding the caller's own exception at the end of a `with`)."""
    db = open_db(busy_timeout_ms=2000)
    db.facts.index_many([Fact(content=f"fact {i}") for i in range(50)])
    other = apsw.Connection(str(db.path))
    other.execute("BEGIN IMMEDIATE")
    try:
        import time

        started = time.monotonic()
        db.close()
        assert time.monotonic() - started < 1.0
        assert db.closed
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_check_while_another_writer_holds_the_lock_says_healthy(
    open_db: Callable[..., sqlmem.MemoryDB],
) -> None:
    """Regression: a healthy file with another writer was reported as damaged (then, as
    StorageBusyError). Since issue 23 item 12, check() takes no write lock at all, so it
    runs to a verdict while another connection writes."""
    db = open_db(busy_timeout_ms=100)
    other = apsw.Connection(str(db.path))
    other.execute("BEGIN IMMEDIATE")
    try:
        report = db.check()
        assert report.ok, report.problems
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert db.check().ok


def test_a_suspended_handle_does_not_recreate_a_deleted_file(db: sqlmem.MemoryDB) -> None:
    """Regression: the reopen after suspension created a new empty database."""
    db.facts.index(Fact(id="f", content="kept"))
    assert db._engine.suspend()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db.path}{suffix}").unlink(missing_ok=True)
    with pytest.raises(sqlmem.SqlmemError, match="disappeared"):
        db.facts.get("f")
    assert not db.path.exists()


def test_a_suspended_handle_reopens_its_file(db: sqlmem.MemoryDB) -> None:
    db.facts.index(Fact(id="f", content="kept"))
    assert db._engine.suspend()
    fact = db.facts.get("f")
    assert fact is not None and fact.content == "kept"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_uses_its_own_connections(
    open_db: Callable[..., sqlmem.MemoryDB],
) -> None:
    """Regression: a child forked while another thread held the writer inherited the held
    lock (its first write failed as busy) and the parent's SQLite connections.

    Since issue 23 (sqlmem.forksafe) the fork itself waits for that transaction to end
    (here the holder lets go after 0.3 s on its own), so the child inherits no connection
    and no lock at all."""
    db = open_db()
    db.history.append("s", Message(role="user", content="from the parent"))
    holding, release = threading.Event(), threading.Event()

    def hold_the_writer() -> None:
        with db._engine.write():
            holding.set()
            release.wait(0.3)

    thread = threading.Thread(target=hold_the_writer)
    thread.start()
    holding.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child
            code = 1
            try:
                db.history.append("s", Message(role="user", content="from the child"))
                code = 0 if db.history.count("s") == 2 else 2
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                os._exit(code)
    finally:
        release.set()
        thread.join()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [m.content for m in db.history.get_all("s")] == ["from the parent", "from the child"]
    assert db.check().ok


def test_backup_refuses_another_spelling_of_the_database(db: sqlmem.MemoryDB) -> None:
    alias = db.path.parent / "sub" / ".." / db.path.name
    (db.path.parent / "sub").mkdir()
    with pytest.raises(sqlmem.InvalidArgumentError, match="database itself"):
        db.backup(alias)
    link = db.path.parent / "link.db"
    link.symlink_to(db.path)
    with pytest.raises(sqlmem.InvalidArgumentError, match="database itself"):
        db.backup(link)
    assert db.check().ok


@pytest.mark.parametrize("spec", ["porter foo", "unicode61 remove_diacritics 9", "nope"])
def test_a_tokenizer_sqlite_refuses_is_an_invalid_argument(spec: str) -> None:
    with pytest.raises(sqlmem.InvalidArgumentError, match="tokenizer"):
        sqlmem.StoreConfig(tokenizer=spec)


def test_a_datetime_out_of_range_in_utc_is_a_value_error() -> None:
    """Regression: OverflowError escaped record construction (pydantic wraps ValueError)."""
    far_east = timezone(timedelta(hours=5))
    with pytest.raises(ValueError, match="out of range"):
        Message(role="user", created_at=datetime(1, 1, 1, tzinfo=far_east))


def test_star_import_does_not_shadow_builtin_open() -> None:
    namespace: dict[str, object] = {}
    exec("from sqlmem import *", namespace)
    assert "open" not in namespace
    assert callable(sqlmem.open)
    assert sys.modules["sqlmem"].open is sqlmem.open


def test_a_write_waits_at_most_the_busy_timeout_in_all(
    open_db: Callable[..., sqlmem.MemoryDB],
) -> None:
    """Regression: a write waited for the in-process lock AND then a full busy timeout at
    BEGIN IMMEDIATE, up to twice the timeout."""
    import time

    db = open_db(busy_timeout_ms=1000)
    writer_lock = db._engine._writer._lock  # type: ignore[union-attr]
    other = apsw.Connection(str(db.path))
    other.execute("BEGIN IMMEDIATE")  # the file stays locked by "another process"
    held = threading.Event()

    def hold_the_thread_lock() -> None:
        with writer_lock:
            held.set()
            time.sleep(0.6)

    thread = threading.Thread(target=hold_the_thread_lock)
    thread.start()
    held.wait(5)
    started = time.monotonic()
    try:
        with pytest.raises(sqlmem.StorageBusyError):
            db.facts.index(Fact(content="late"))
        elapsed = time.monotonic() - started
    finally:
        thread.join()
        other.execute("ROLLBACK")
        other.close()
    assert 0.9 <= elapsed < 1.4, elapsed  # about 1.0 s; it was about 1.6 s
    db.facts.index(Fact(content="works again"))


def test_both_stores_query_with_the_tokenizer_the_file_was_made_with(db_path: Path) -> None:
    """Regression: facts used the file's tokenizer, history the config's; reopening a
    default file with tokenizer='trigram' found 'go' in facts but not in history."""
    with sqlmem.open(db_path) as db:
        db.facts.index(Fact(content="we go running"))
        db.history.append("s", Message(role="user", content="we go running"))
    with sqlmem.open(db_path, sqlmem.StoreConfig(tokenizer="trigram")) as db:
        assert db._engine.tokenizer == sqlmem.StoreConfig().tokenizer
        assert len(db.facts.search("go")) == 1
        assert len(db.history.search("go")) == 1
        assert len(db.history.search("runs")) == 1  # porter stemming, as created


def test_opening_a_migrated_file_takes_no_write_lock(db_path: Path) -> None:
    """Regression: every open ran its hooks inside BEGIN IMMEDIATE, so reading a live
    agent's memory (`sqlmem search ...`) waited for, or failed on, the agent's writes."""
    with sqlmem.open(db_path) as db:
        db.facts.index(Fact(content="still readable"))
    other = apsw.Connection(str(db_path))
    other.execute("BEGIN IMMEDIATE")
    try:
        with sqlmem.open(db_path, sqlmem.StoreConfig(busy_timeout_ms=50)) as db:
            assert [f.content for f in db.facts.search("readable")] == ["still readable"]
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_in_memory_twins_take_a_store_config_alike() -> None:
    """Regression: InMemoryFactStore took a bare tokenizer string and leaked apsw errors."""
    config = sqlmem.StoreConfig(tokenizer="unicode61")
    facts = sqlmem.InMemoryFactStore(config)
    facts.index(Fact(content="running shoes"))
    assert facts.search("running") and not facts.search("run")  # no stemming
    assert sqlmem.InMemoryHistoryStore(config)
    for bad in ("nonsense", 5):
        with pytest.raises(sqlmem.InvalidArgumentError, match="config"):
            sqlmem.InMemoryFactStore(bad)  # type: ignore[arg-type]


def test_history_and_facts_accept_the_same_integer_types(db: sqlmem.MemoryDB) -> None:
    """Regression: facts.search took numpy integers, history refused them."""
    import numpy as np

    db.history.append_many("s", [Message(role="user", content=f"note {i}") for i in range(5)])
    db.facts.index(Fact(content="a note"))
    assert len(db.history.get_recent("s", np.int64(3))) == 3
    assert len(db.history.search("note", top_k=np.int32(2))) == 2
    assert len(db.facts.search("note", np.int64(1))) == 1
    for call in (lambda: db.history.get_recent("s", True), lambda: db.facts.search("x", True)):
        with pytest.raises(sqlmem.InvalidArgumentError):
            call()
