"""A new database file made where an earlier file's -wal and -shm were left behind.

How it happens: a process writing in WAL mode is killed, then its database file (only
that file) is deleted, and an agent with the same path is created again. SQLite replays a
-wal it finds beside a database file that has pages; beside an empty file it deletes it.
A new file must therefore be empty when SQLite first opens it: one that starts with pages
already in it (say, a copy of a migrated template) gets the old file's WAL replayed over
its own pages, and then shows the old agent's rows or fails to read. This is the guard
for any faster way of making new files."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import sqlmem

_CRASHING_WRITER = textwrap.dedent(
    """
    import os, sys
    import sqlmem
    db = sqlmem.open(sys.argv[1])
    db.history.append_many(
        "old", [sqlmem.Message(role="user", content=f"old secret {i}") for i in range(200)]
    )
    db.facts.index(sqlmem.Fact(id="old-fact", content="the old agent's fact"))
    os._exit(0)  # killed: no checkpoint, no close; the -wal and -shm stay
    """
)


def test_a_new_file_never_replays_a_stale_wal(tmp_path: Path) -> None:
    path = tmp_path / "agents" / "a" / "memory.db"
    subprocess.run([sys.executable, "-c", _CRASHING_WRITER, str(path)], check=True)
    wal = Path(f"{path}-wal")
    assert wal.exists() and wal.stat().st_size > 0  # the case this test is about
    path.unlink()  # the database file goes; its -wal and -shm are left behind
    with sqlmem.open(path) as db:
        assert db.history.sessions() == []
        assert db.facts.get("old-fact") is None
        db.history.append("new", sqlmem.Message(role="user", content="fresh"))
        assert db.check().ok
    with sqlmem.open(path) as db:
        assert [m.content for m in db.history.get_all("new")] == ["fresh"]
        assert db.history.sessions() == ["new"]
