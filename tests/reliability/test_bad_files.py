"""Bad files: whatever sits at the path, sqlmem refuses it clearly and changes no byte.

Each kind of bad file is tried through `sqlmem.open`, `MemoryFactory.resolve` and every
CLI command: the error is a sqlmem error naming the path (one `sqlmem: error:` line and a
non-zero exit on the command line), and the file's bytes, and the folder's listing, are
exactly as before.

Decision, pinned here: an EMPTY file (0 bytes) is a new database. SQLite treats it so, and
`ensure_file` itself creates the empty file before SQLite sees it, so a process killed
between the two must not leave a file that can never be opened again. Read-only CLI
commands still refuse it (it has no sqlmem schema) and leave it at 0 bytes.

Also pinned: a damaged page inside a file that opens is reported as `CorruptDatabaseError`
(never an apsw error), and `check()` reports a healthy file as healthy even right after
another connection wrote to it (SQLite's `PRAGMA integrity_check` includes FTS5 tables
and, on a connection whose cached FTS5 structure is stale, used to report a healthy file
as damaged).
"""

from __future__ import annotations

import io
import json
import os
import random
import sqlite3
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

import sqlmem
from sqlmem import (
    CorruptDatabaseError,
    Fact,
    Message,
    MigrationChecksumError,
    MigrationError,
    SchemaTooNewError,
    SqlmemError,
)
from sqlmem.cli import main as cli_main
from sqlmem.sqlite.core.migrations import latest_version

# -- making bad files ----------------------------------------------------------------------


def _real_db(path: Path) -> None:
    with sqlmem.open(path) as db:
        db.history.append_many(
            "s", [Message(role="user", content=f"message {i} " + "x" * 400) for i in range(150)]
        )
        db.facts.index_many([Fact(content=f"fact {i} " + "y" * 400) for i in range(150)])


def _truncated(fraction: float | None, size: int | None = None) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        _real_db(path)
        data = path.read_bytes()
        cut = size if size is not None else int(len(data) * (fraction or 0))
        path.write_bytes(data[:cut])

    return make


def _random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(7).randbytes(16384))


def _header_only(path: Path) -> None:
    """A valid SQLite header followed by zeroed pages."""
    _real_db(path)
    data = path.read_bytes()
    path.write_bytes(data[:100] + bytes(len(data) - 100))


def _foreign(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("INSERT INTO users VALUES ('alice')")
    conn.commit()
    conn.close()


def _foreign_with_user_version(path: Path) -> None:
    """Another program's file that uses user_version for its own schema version."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


def _foreign_user_version_only(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


def _newer_schema(path: Path) -> None:
    _real_db(path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 999")
    conn.commit()
    conn.close()


def _edited_migration(path: Path) -> None:
    _real_db(path)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET sha256 = 'edited' WHERE version = 1")
    conn.commit()
    conn.close()


def _directory(path: Path) -> None:
    path.mkdir()


def _parent_is_a_file(path: Path) -> None:
    path.parent.rmdir()
    path.parent.write_bytes(b"a file where a folder should be\n")


#: kind -> (maker, the error class sqlmem.open must raise)
BAD: dict[str, tuple[Callable[[Path], None], type[SqlmemError]]] = {
    "truncated_half": (_truncated(0.5), CorruptDatabaseError),
    "truncated_100_bytes": (_truncated(None, 100), CorruptDatabaseError),
    "truncated_3_pages": (_truncated(None, 3 * 4096), CorruptDatabaseError),
    "random_bytes": (_random_bytes, CorruptDatabaseError),
    "header_then_zeros": (_header_only, CorruptDatabaseError),
    "foreign_sqlite": (_foreign, MigrationError),
    "foreign_with_user_version": (_foreign_with_user_version, MigrationError),
    "foreign_user_version_only": (_foreign_user_version_only, MigrationError),
    "newer_schema": (_newer_schema, SchemaTooNewError),
    "edited_migration": (_edited_migration, MigrationChecksumError),
    "directory": (_directory, SqlmemError),
    "parent_is_a_file": (_parent_is_a_file, SqlmemError),
}


def _snapshot(path: Path) -> tuple[bytes | None, list[str]]:
    """The file's bytes (None if not a regular file) and its folder's listing."""
    folder = path.parent if path.parent.is_dir() else path.parent.parent
    data = path.read_bytes() if path.is_file() else None
    return data, sorted(p.name for p in folder.iterdir())


def _make(tmp_path: Path, kind: str, name: str = "memory.db") -> Path:
    path = tmp_path / kind / name
    path.parent.mkdir(parents=True)
    BAD[kind][0](path)
    return path


# -- sqlmem.open ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(BAD))
def test_open_refuses_bad_files_without_changing_them(tmp_path: Path, kind: str) -> None:
    path = _make(tmp_path, kind)
    before = _snapshot(path)
    for _ in range(2):  # and again: the first refusal left nothing behind that helps
        with pytest.raises(BAD[kind][1]) as caught:
            sqlmem.open(path)
        assert str(path) in str(caught.value)
        assert _snapshot(path) == before


def test_empty_file_opens_as_a_new_database(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    path.write_bytes(b"")
    with sqlmem.open(path) as db:
        assert db.stats()["schema_version"] == latest_version()
        db.facts.index(Fact(id="f", content="first fact"))
    with sqlmem.open(path) as db:
        fact = db.facts.get("f")
        assert fact is not None and fact.content == "first fact"
        assert db.check().ok


def test_garbage_wal_next_to_a_good_file_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    _real_db(path)
    Path(f"{path}-wal").write_bytes(random.Random(3).randbytes(40000))
    with sqlmem.open(path) as db:
        assert db.history.count("s") == 150
        assert len(db.facts.search("fact", top_k=500)) == 150
        assert db.check().ok


def test_damaged_pages_raise_corrupt_database_error_not_apsw(tmp_path: Path) -> None:
    """Zeroed or random pages inside a file that opens: each call works or says corrupt."""
    source = tmp_path / "source.db"
    _real_db(source)
    data = source.read_bytes()
    pages = len(data) // 4096
    rng = random.Random(11)
    outcomes: dict[str, int] = {}
    for page in rng.sample(range(1, pages), min(12, pages - 1)):
        damaged = bytearray(data)
        damaged[page * 4096 : (page + 1) * 4096] = rng.choice([bytes(4096), rng.randbytes(4096)])
        path = tmp_path / f"damaged-{page}.db"
        path.write_bytes(bytes(damaged))
        try:
            db = sqlmem.open(path)
        except CorruptDatabaseError as exc:
            assert str(path) in str(exc)
            outcomes["open refused"] = outcomes.get("open refused", 0) + 1
            continue
        calls: list[Callable[[sqlmem.MemoryDB], object]] = [
            lambda d: d.stats(),
            lambda d: d.history.get_all("s", include_archived=True),
            lambda d: d.history.search("message"),
            lambda d: d.facts.search("fact y"),
            lambda d: d.facts.list(limit=500),
            lambda d: d.history.append("s", Message(role="user", content="more")),
            lambda d: d.facts.index(Fact(content="more")),
            lambda d: d.check(),
            lambda d: d.close(),
        ]
        for call in calls:
            try:
                call(db)
            except CorruptDatabaseError as exc:
                assert isinstance(exc.__cause__, Exception)
                outcomes["corrupt"] = outcomes.get("corrupt", 0) + 1
            else:
                outcomes["ok"] = outcomes.get("ok", 0) + 1
        db.close()
    assert outcomes.get("corrupt", 0) + outcomes.get("open refused", 0) > 0, outcomes


# -- check() on a healthy file ---------------------------------------------------------------


def test_check_is_not_fooled_by_another_connections_writes(db: sqlmem.MemoryDB) -> None:
    """Regression: `check()` ran PRAGMA integrity_check on a pooled reader. Since SQLite
    3.44 that pragma also checks FTS5 tables, using the connection's cached FTS5 structure
    without refreshing it, so after the writer merged FTS segments a healthy file was
    reported as 'fts5: checksum mismatch' / 'corruption found reading blob'."""
    for i in range(40):
        db.history.append_many("s", [Message(role="user", content=f"round {i} words")] * 3)
        db.facts.index(Fact(content=f"fact {i} words"))
        report = db.check()
        assert report.ok, (i, report.problems)


# -- the factory ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(BAD))
def test_factory_refuses_bad_files_and_retries(tmp_path: Path, kind: str) -> None:
    data_dir = tmp_path / "data"
    path = data_dir / "agents" / "agent-1" / "memory.db"
    path.parent.mkdir(parents=True)
    BAD[kind][0](path)
    before = _snapshot(path)
    with sqlmem.MemoryFactory(data_dir) as factory:
        for _ in range(2):  # a failed open is not cached: the second resolve tries again
            with pytest.raises(SqlmemError) as caught:
                factory.resolve("agent-1")
            assert str(path) in str(caught.value)
            assert _snapshot(path) == before
        assert factory.resolve("agent-2") is not None  # other agents are unaffected
        # Once the bad file is gone, the same factory opens the agent.
        if path.parent.is_file():
            path.parent.unlink()
        elif path.is_dir():
            path.rmdir()
        else:
            path.unlink()
        db = factory.resolve("agent-1")
        assert db is not None and db.check().ok


def test_factory_data_dir_that_is_a_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.write_bytes(b"not a folder")
    with sqlmem.MemoryFactory(data_dir) as factory, pytest.raises(SqlmemError) as caught:
        factory.resolve("agent")
    assert str(data_dir) in str(caught.value)
    assert data_dir.read_bytes() == b"not a folder"


# -- the command line ----------------------------------------------------------------------

_READ_ONLY = (
    ("info",),
    ("check",),
    ("search", "{path}", "words"),
    ("search", "{path}", "words", "--history"),
    ("history", "{path}", "s"),
    ("export", "{path}"),
)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = cli_main(list(argv))
    return status, out.getvalue(), err.getvalue()


def _argv(command: tuple[str, ...], path: Path) -> list[str]:
    if len(command) == 1:
        return [command[0], str(path)]
    return [part.format(path=path) for part in command]


def _export_file(tmp_path: Path) -> Path:
    source = tmp_path / "export-source" / "memory.db"
    source.parent.mkdir()
    _real_db(source)
    target = tmp_path / "export.jsonl"
    status, _, err = _cli("export", str(source), "-o", str(target))
    assert status == 0, err
    return target


def _assert_one_error_line(status: int, err: str, path: Path) -> None:
    assert status != 0
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("sqlmem: error: "), err
    assert "Traceback" not in err and "apsw" not in err, err
    assert str(path) in err, err


@pytest.mark.parametrize("kind", sorted(BAD))
def test_cli_refuses_bad_files_in_one_line(tmp_path: Path, kind: str) -> None:
    export = _export_file(tmp_path)
    path = _make(tmp_path, kind)
    before = _snapshot(path)
    commands = [_argv(c, path) for c in _READ_ONLY]
    commands += [["migrate", str(path)], ["import", str(path), str(export)]]
    for argv in commands:
        for extra in ([], ["--json"]):
            status, _, err = _cli(*argv, *extra)
            _assert_one_error_line(status, err, path)
            assert _snapshot(path) == before, argv


def test_cli_on_an_empty_file(tmp_path: Path) -> None:
    """Read-only commands refuse it untouched; migrate (or import) makes it a database."""
    path = tmp_path / "memory.db"
    path.write_bytes(b"")
    for command in _READ_ONLY:
        status, _, err = _cli(*_argv(command, path))
        _assert_one_error_line(status, err, path)
        assert path.read_bytes() == b""
    status, out, err = _cli("migrate", str(path), "--json")
    assert status == 0, err
    assert json.loads(out)["schema_version"] == latest_version()
    status, _, err = _cli("check", str(path))
    assert status == 0, err


def test_bad_file_fixtures_are_what_they_claim(tmp_path: Path) -> None:
    """The truncated files really are shorter than a real one (the test can fail)."""
    full = tmp_path / "full.db"
    _real_db(full)
    size = os.path.getsize(full)
    for kind in ("truncated_half", "truncated_100_bytes", "truncated_3_pages"):
        assert 0 < os.path.getsize(_make(tmp_path, kind)) < size
