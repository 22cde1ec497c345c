"""Migrations: empty -> latest, idempotent re-open, too-new files, checksum drift,
plan validation, upgrade from every older version, concurrent first open."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import sqlite_utils

import sqlmem
from sqlmem.sqlite.core.migrations import latest_version, load_migrations


def _ledger(path: Path) -> list[tuple[int, str, str]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT version, name, sha256 FROM schema_version").fetchall()


def _user_version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def test_new_file_is_migrated_to_latest(db_path: Path) -> None:
    with sqlmem.open(db_path) as db:
        assert db.stats()["schema_version"] == latest_version()
    plan = load_migrations()
    assert _ledger(db_path) == [(m.version, m.name, m.sha256) for m in plan]
    assert _user_version(db_path) == latest_version()


def test_schema_is_plain_sqlite_for_other_tools(db_path: Path) -> None:
    """sqlite-utils over the stdlib driver sees our tables, triggers and FTS tables."""
    with sqlmem.open(db_path) as db:
        db.facts.index(sqlmem.Fact(id="f1", content="Hedgehogs hibernate in winter"))
    other = sqlite_utils.Database(sqlite3.connect(db_path))
    names = set(other.table_names())
    assert {"sessions", "messages", "facts", "fact_tags", "schema_version"} <= names
    assert {"messages_fts", "facts_fts"} <= names
    assert {t.name for t in other.triggers} >= {"facts_insert", "facts_delete"}
    found = other.execute(
        "SELECT f.id FROM facts_fts JOIN facts f ON f.pk = facts_fts.rowid "
        "WHERE facts_fts MATCH 'hibernating' ORDER BY rank"
    ).fetchall()
    assert found == [("f1",)]
    # Written by a plain client, found by sqlmem: the triggers keep the index in sync.
    other.execute(
        "INSERT INTO facts(id, content, created_at, updated_at) VALUES ('f2', 'owls hunt', 1, 1)"
    )
    other.conn.commit()
    other.conn.close()
    with sqlmem.open(db_path) as db:
        assert [f.id for f in db.facts.search("owl")] == ["f2"]


def test_reopen_runs_nothing_again(db_path: Path) -> None:
    sqlmem.open(db_path).close()
    before = _ledger(db_path)
    sqlmem.open(db_path).close()
    assert _ledger(db_path) == before


def test_too_new_file_is_refused_and_left_byte_for_byte(db_path: Path) -> None:
    sqlmem.open(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {latest_version() + 1}")
    conn.commit()
    conn.close()
    before = db_path.read_bytes()
    with pytest.raises(sqlmem.SchemaTooNewError, match=str(db_path)):
        sqlmem.open(db_path)
    assert db_path.read_bytes() == before
    assert not Path(f"{db_path}-wal").exists() or Path(f"{db_path}-wal").stat().st_size == 0


def test_edited_migration_is_detected(db_path: Path) -> None:
    sqlmem.open(db_path).close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE schema_version SET sha256 = 'edited' WHERE version = 1")
    with pytest.raises(sqlmem.MigrationChecksumError, match="0001_initial"):
        sqlmem.open(db_path)


def test_foreign_sqlite_file_is_refused_untouched(db_path: Path) -> None:
    with sqlite3.connect(db_path) as conn:
        conn.execute("CREATE TABLE notes(x)")
    conn.close()
    before = db_path.read_bytes()
    with pytest.raises(sqlmem.MigrationError, match="not a sqlmem database"):
        sqlmem.open(db_path)
    assert db_path.read_bytes() == before


@pytest.mark.parametrize(
    ("names", "problem"),
    [
        (["0001_a.sql", "0003_c.sql"], "without gaps"),
        (["0002_b.sql"], "without gaps"),
        (["0001_a.sql", "0001_b.sql"], "appears twice"),
        (["1_a.sql"], "NNNN_slug"),
        (["0001_Bad-Name.sql"], "NNNN_slug"),
    ],
)
def test_plan_is_validated_before_anything_runs(
    tmp_path: Path, names: list[str], problem: str
) -> None:
    folder = tmp_path / "migrations"
    folder.mkdir()
    for name in names:
        (folder / name).write_text("SELECT 1;")
    with pytest.raises(sqlmem.MigrationError, match=problem):
        load_migrations(folder)


@pytest.mark.parametrize("version", range(latest_version()))
def test_each_older_version_upgrades_keeping_rows(tmp_path: Path, version: int) -> None:
    """A file left at `version` by an earlier release opens and is upgraded."""
    path = tmp_path / f"v{version}.db"
    plan = load_migrations()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    if version:
        conn.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " sha256 TEXT NOT NULL, applied_at INTEGER NOT NULL)"
        )
    for migration in plan[:version]:
        conn.executescript(migration.sql.replace("{tokenizer}", sqlmem.StoreConfig().tokenizer))
        conn.execute(
            "INSERT INTO schema_version VALUES (?, ?, ?, 0)",
            (migration.version, migration.name, migration.sha256),
        )
        conn.execute(f"PRAGMA user_version = {migration.version}")
    if version >= 1:
        conn.execute(
            "INSERT INTO facts(id, content, created_at, updated_at) "
            "VALUES ('old', 'kept from an old release', 1, 1)"
        )
    conn.commit()
    conn.close()
    with sqlmem.open(path) as db:
        assert db.stats()["schema_version"] == latest_version()
        if version >= 1:
            assert db.facts.get("old") is not None


_OPENER = textwrap.dedent(
    """
    import sys, time
    import sqlmem
    start = float(sys.argv[2])
    while time.time() < start:
        time.sleep(0.0005)
    with sqlmem.open(sys.argv[1]) as db:
        db.history.append("s", sqlmem.Message(role="user", content=sys.argv[3]))
    """
)


def test_concurrent_first_open_from_processes(tmp_path: Path) -> None:
    """Several processes create the same new file at once: all succeed, each migration
    runs once, and every process's write is there.

    Regression: the foreign-file check read user_version and the table list in two
    snapshots, so an opener could see another's fresh tables with version 0 and refuse
    the file as foreign (about 1 run in 40 with 4 openers)."""
    import time

    for attempt in range(5):
        path = tmp_path / f"race{attempt}.db"
        start = time.time() + 1.5
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _OPENER, str(path), str(start), f"proc{i}"],
                stderr=subprocess.PIPE,
            )
            for i in range(4)
        ]
        errors = [p.communicate(timeout=60)[1].decode() for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, errors
        assert len(_ledger(path)) == latest_version()
        with sqlmem.open(path) as db:
            contents = sorted(m.content for m in db.history.get_all("s"))
        assert contents == [f"proc{i}" for i in range(4)]


#: sha256 of every migration as released. A released migration must never change (files in
#: users' hands recorded these); schema changes go into a new NNNN_slug.sql instead.
RELEASED = {
    1: "18db31b2253de0bac4d9be8a82736f51819b448b9e7652d7ef9fb6b417806c37",
    2: "736621fe7eae58ff8273820f1692d72f9c91cc34338c872ec46e9a1050782e15",
}


@pytest.mark.parametrize("version", [0, 1])
def test_fts_tables_write_2000_byte_leaves(tmp_path: Path, version: int) -> None:
    """Migration 2 sets pgsz on both FTS tables, for new files and upgraded ones; the
    index stays intact and searchable across the change."""
    path = tmp_path / "m.db"
    if version == 1:
        conn = sqlite3.connect(path)
        conn.executescript(
            load_migrations()[0].sql.replace("{tokenizer}", sqlmem.StoreConfig().tokenizer)
        )
        conn.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " sha256 TEXT NOT NULL, applied_at INTEGER NOT NULL)"
        )
        first = load_migrations()[0]
        conn.execute("INSERT INTO schema_version VALUES (1, ?, ?, 0)", (first.name, first.sha256))
        conn.execute(
            "INSERT INTO facts(id, content, created_at, updated_at) VALUES ('a', 'owls', 1, 1)"
        )
        conn.execute("PRAGMA user_version = 1")
        conn.commit()
        conn.close()
    with sqlmem.open(path) as db:
        db.facts.index(sqlmem.Fact(id="b", content="owls and larks"))
        db.history.append("s", sqlmem.Message(role="user", content="larks sing"))
        assert sorted(f.id for f in db.facts.search("owls")) == ["a", "b"][1 - version :]
        assert db.check().ok
    with sqlite3.connect(path) as conn:
        for table in ("facts_fts", "messages_fts"):
            rows = dict(conn.execute(f"SELECT k, v FROM {table}_config").fetchall())
            assert rows["pgsz"] == 2000


def test_released_migrations_never_change() -> None:
    plan = {m.version: m.sha256 for m in load_migrations()}
    for version, sha256 in RELEASED.items():
        assert plan[version] == sha256, f"migration {version} was edited after release"
