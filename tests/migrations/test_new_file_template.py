"""New files start as a copy of a migrated template: the copy must be exactly what running
the migrations gives (schema, ledger, version), keep the file modes, leave nothing behind,
honour the config's tokenizer, and stay right when several threads create one file."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

import sqlmem
from sqlmem.sqlite.migrations import latest_version, load_migrations


def _schema(path: Path) -> list[tuple[str, str, str, str | None]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name"
        ).fetchall()


def _ledger(path: Path) -> list[tuple[int, str, str, int]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT version, name, sha256, applied_at FROM schema_version ORDER BY version"
        ).fetchall()


def _migrated_step_by_step(path: Path, config: sqlmem.StoreConfig | None = None) -> None:
    """An existing empty file is migrated in place, one migration per transaction."""
    path.touch(mode=0o600)
    sqlmem.open(path, config).close()


@pytest.fixture
def statements_on() -> Iterator[dict[str, list[str]]]:
    """Every SQL statement run by any apsw connection, by the file it was opened on."""
    seen: dict[str, list[str]] = {}

    def hook(conn: apsw.Connection) -> None:
        log = seen.setdefault(conn.filename, [])

        def trace(cursor: apsw.Cursor, sql: str, bindings: object) -> bool:
            log.append(sql)
            return True

        conn.exec_trace = trace

    apsw.connection_hooks.append(hook)
    try:
        yield seen
    finally:
        apsw.connection_hooks.remove(hook)


def test_copy_equals_running_the_migrations(tmp_path: Path) -> None:
    stepwise, copied = tmp_path / "stepwise.db", tmp_path / "copied.db"
    _migrated_step_by_step(stepwise)
    before = time.time_ns() // 1_000_000
    sqlmem.open(copied).close()
    after = time.time_ns() // 1_000_000
    assert _schema(copied) == _schema(stepwise)
    plan = [(m.version, m.name, m.sha256) for m in load_migrations()]
    assert [row[:3] for row in _ledger(copied)] == plan == [row[:3] for row in _ledger(stepwise)]
    # applied_at is when this file was made, not when the template was built.
    assert all(before <= row[3] <= after for row in _ledger(copied))
    with sqlmem.open(copied) as db:
        assert db.stats()["schema_version"] == latest_version()
        assert db.check().ok


def test_a_new_file_runs_no_migration_sql(
    tmp_path: Path, statements_on: dict[str, list[str]]
) -> None:
    sqlmem.open(tmp_path / "first.db").close()  # the template exists after this
    path = tmp_path / "second.db"
    with sqlmem.open(path) as db:
        db.history.append("s", sqlmem.Message(role="user", content="hello"))
    ran = statements_on[str(path)]
    assert ran, "the exec tracer saw nothing"
    assert not [sql for sql in ran if "CREATE TABLE" in sql.upper()]
    with sqlmem.open(path) as db:
        assert [m.content for m in db.history.get_all("s")] == ["hello"]


def test_modes_kept_and_nothing_left_behind(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "a" / "b" / "memory.db"
        sqlmem.open(path).close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == ["memory.db"]


def test_the_configs_tokenizer_is_the_files(tmp_path: Path) -> None:
    trigram = sqlmem.StoreConfig(tokenizer="trigram")
    stepwise, copied, plain = tmp_path / "s.db", tmp_path / "c.db", tmp_path / "p.db"
    _migrated_step_by_step(stepwise, trigram)
    sqlmem.open(copied, trigram).close()
    sqlmem.open(plain).close()  # a template per tokenizer: the default one is not reused
    assert _schema(copied) == _schema(stepwise)
    assert "trigram" in str(_schema(copied)) and "trigram" not in str(_schema(plain))
    with sqlmem.open(copied) as db:
        db.facts.index(sqlmem.Fact(id="f", content="hedgehogs"))
        assert [f.id for f in db.facts.search("dgeho")] == ["f"]


def test_threads_creating_one_new_file_all_succeed(tmp_path: Path) -> None:
    for attempt in range(3):
        path = tmp_path / f"race{attempt}" / "memory.db"
        barrier = threading.Barrier(6)
        errors: list[BaseException] = []

        def open_and_append(
            i: int,
            path: Path = path,
            barrier: threading.Barrier = barrier,
            errors: list[BaseException] = errors,
        ) -> None:
            barrier.wait()
            try:
                with sqlmem.open(path) as db:
                    db.history.append("s", sqlmem.Message(role="user", content=f"t{i}"))
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=open_and_append, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(_ledger(path)) == latest_version()
        with sqlmem.open(path) as db:
            assert sorted(m.content for m in db.history.get_all("s")) == [f"t{i}" for i in range(6)]
        assert [p.name for p in path.parent.iterdir()] == ["memory.db"]  # no scratch copy
