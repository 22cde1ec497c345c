"""A new file gets the whole migration plan in one write transaction; an existing file
still gets each pending migration in its own.

Why it matters: creating an agent's file used to cost one commit per migration; now it
costs one, and a new file whose plan fails part-way is left empty (version 0, no tables)
rather than half-made, while an older file being upgraded keeps every migration that
succeeded before the failing one."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem.errors import SqlmemError
from sqlmem.sqlite.core import migrations
from sqlmem.sqlite.core.migrations import latest_version, load_migrations


def _ledger(path: Path) -> list[tuple[int, str, str, int]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT version, name, sha256, applied_at FROM schema_version ORDER BY version"
        ).fetchall()
    finally:
        conn.close()


def _version_and_tables(path: Path) -> tuple[int, list[str]]:
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_schema")]
        return version, tables
    finally:
        conn.close()


def _plan_failing_at_last(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = load_migrations()
    broken = dataclasses.replace(plan[-1], sql="CREATE TABLE facts (x);")  # exists already
    monkeypatch.setattr(migrations, "load_migrations", lambda folder=None: (*plan[:-1], broken))


def test_new_file_gets_every_migration_with_one_commit(db_path: Path) -> None:
    with sqlmem.open(db_path) as db:
        assert db.stats()["schema_version"] == latest_version()
    ledger = _ledger(db_path)
    assert [row[:3] for row in ledger] == [(m.version, m.name, m.sha256) for m in load_migrations()]
    assert len({row[3] for row in ledger}) == 1  # one transaction, one time


def test_new_file_whose_plan_fails_is_left_empty(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plan_failing_at_last(monkeypatch)
    with pytest.raises(SqlmemError):
        sqlmem.open(db_path)
    assert _version_and_tables(db_path) == (0, [])
    monkeypatch.undo()
    with sqlmem.open(db_path) as db:  # the next open makes it whole
        assert db.stats()["schema_version"] == latest_version()


def test_upgrade_keeps_each_migration_that_succeeded(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An existing file at version 1 is upgraded one migration per transaction: a failure
    at the last leaves every earlier one applied and recorded."""
    plan = load_migrations()
    old = db_path.parent / "old.db"
    first = plan[0]
    conn = sqlite3.connect(old)
    conn.executescript(
        first.sql.replace("{tokenizer}", sqlmem.StoreConfig().tokenizer)
        + "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "sha256 TEXT NOT NULL, applied_at INTEGER NOT NULL);"
    )
    conn.execute(
        "INSERT INTO schema_version VALUES (?, ?, ?, 1)", (first.version, first.name, first.sha256)
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    _plan_failing_at_last(monkeypatch)
    with pytest.raises(SqlmemError):
        sqlmem.open(old)
    version, _ = _version_and_tables(old)
    assert version == len(plan) - 1
    assert [row[0] for row in _ledger(old)] == list(range(1, len(plan)))


def test_a_newer_sqlmem_making_the_file_meanwhile_is_refused(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Right after the migrations first read a new file's version (0), another process
    running a newer sqlmem makes it: the version read again inside the write lock refuses
    the file as too new, and leaves it as that process made it."""
    from sqlmem.errors import SchemaTooNewError

    first_read = migrations.read_user_version
    reads: list[int] = []

    def newer_process_after_first_read(conn: Any) -> int:
        version = first_read(conn)
        reads.append(version)
        if len(reads) == 2:  # the open's look for foreign files, then the migrations' own
            other = sqlite3.connect(db_path, timeout=10)
            other.execute("CREATE TABLE from_the_future (x)")
            other.execute(f"PRAGMA user_version = {latest_version() + 1}")
            other.commit()
            other.close()
        return version

    sqlmem.open(db_path.parent / "warm.db").close()  # plan and folders looked up already
    monkeypatch.setattr(migrations, "read_user_version", newer_process_after_first_read)
    with pytest.raises(SchemaTooNewError):
        sqlmem.open(db_path)
    assert reads[:2] == [0, 0] and len(reads) == 3
    assert _version_and_tables(db_path) == (latest_version() + 1, ["from_the_future"])
