"""Read-only commands never write to the file (SPEC 10, 0.2).

Issue 23 item 4: on a file made with `history_search=False`, `info`, `search`, `history`,
`export` and `check` opened it like a program does: they indexed every unindexed message
(the open hook, under the write lock), switched a rollback-journal file to WAL and ran
`PRAGMA optimize` at close, so the file's bytes changed; `check` also took the write lock
for FTS5's integrity-check, so it waited behind (and failed beside) a live writer.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

import sqlmem
from sqlmem import Fact, Message
from sqlmem.cli import main

# PATH and OUT are replaced by the database and an export file beside it.
COMMANDS = [
    ["info", "PATH"],
    ["check", "PATH"],
    ["search", "PATH", "dog"],
    ["search", "PATH", "hello", "--history"],
    ["history", "PATH", "chat", "--all"],
    ["sessions", "PATH"],
    ["export", "PATH"],
    ["export", "PATH", "-o", "OUT"],
    ["docs", "PATH", "list"],
    ["docs", "PATH", "show", "MEMORY.md"],
    ["docs", "PATH", "show", "MEMORY.md", "--revision", "1"],
    ["docs", "PATH", "history", "MEMORY.md"],
    ["docs", "PATH", "search", "dog"],
    ["docs", "PATH", "export", "OUT"],
    ["pack", "PATH", "dog"],
    ["search", "PATH", "dog", "--mode", "hybrid", "--embedder", "wordllama"],
]
IDS = [" ".join(c[:1] + [a for a in c[2:] if a != "OUT"]) for c in COMMANDS]

KINDS = {
    "history_search_off": sqlmem.StoreConfig(history_search=False),
    "rollback_journal": sqlmem.StoreConfig(wal=False),
}


def make_memory(path: Path, config: sqlmem.StoreConfig) -> None:
    """Enough rows for every command to read something, across several pages."""
    with sqlmem.open(path, config) as db:
        db.history.append_many(
            "chat", [Message(role="user", content=f"hello number {i}") for i in range(200)]
        )
        db.facts.index_many(Fact(content=f"the dog {i} likes walks") for i in range(200))
        for i in range(3):
            db.docs.write("MEMORY.md", f"# Memory\n\nthe dog is called Rex {i}\n")


def files_beside(path: Path) -> dict[str, bytes]:
    """Every file of the database's folder, with its bytes (no -wal/-shm/-journal left)."""
    return {p.name: p.read_bytes() for p in sorted(path.parent.iterdir()) if p.is_file()}


def argv_for(command: list[str], path: Path) -> list[str]:
    out = path.parent / "export" / "out.jsonl"
    return [str(path) if a == "PATH" else str(out) if a == "OUT" else a for a in command]


@pytest.fixture(params=list(KINDS), ids=list(KINDS))
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / "db" / "memory.db"
    make_memory(path, KINDS[request.param])
    return path


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_read_only_commands_leave_the_file_byte_for_byte(
    memory: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 23 item 4: no indexing, no WAL switch, no optimize, nothing left beside it."""
    before = files_beside(memory)
    assert main(argv_for(command, memory)) == 0, capsys.readouterr().err
    assert files_beside(memory) == before


@pytest.fixture
def write_lock_held(memory: Path) -> Iterator[None]:
    """Another connection inside BEGIN IMMEDIATE, with a write not yet committed."""
    other = apsw.Connection(str(memory))
    other.execute("BEGIN IMMEDIATE")
    other.execute("UPDATE facts SET category = 'held'")
    yield
    other.execute("ROLLBACK")
    other.close()


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
@pytest.mark.usefixtures("write_lock_held")
def test_read_only_commands_take_no_write_lock(
    memory: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 23 item 4: a live writer does not make a read-only command wait or fail.

    Taking the lock would wait the busy timeout (5 s) and then fail; the bound leaves
    a wide margin for a loaded CI machine and still catches a wait.
    """
    started = time.monotonic()
    assert main(argv_for(command, memory)) == 0, capsys.readouterr().err
    assert time.monotonic() - started < 2.5


def test_a_wal_left_by_another_process_is_not_checkpointed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 23 item 4: closing the last connection checkpoints a WAL into the file; a
    read-only command leaves a crashed (or running) writer's WAL where it is."""
    path = tmp_path / "memory.db"
    make_memory(path, sqlmem.StoreConfig())
    child = (
        "import os, sys, sqlmem\n"
        "db = sqlmem.open(sys.argv[1])\n"
        "db.facts.index(sqlmem.Fact(content='written just before a crash'))\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", child, str(path)], check=True, timeout=60)
    wal = path.with_name(f"{path.name}-wal")
    before = (path.read_bytes(), wal.read_bytes())
    assert before[1]
    for command in (["info", str(path)], ["search", str(path), "crash"]):
        assert main(command) == 0, capsys.readouterr().err
        # The -shm is SQLite's scratch index of the WAL: reading rebuilds it.
        assert (path.read_bytes(), wal.read_bytes()) == before
    assert "written just before a crash" in capsys.readouterr().out  # read through the WAL


def test_history_search_says_when_messages_are_unindexed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 23 item 4: the search does not index them (a write); it says it missed them."""
    path = tmp_path / "memory.db"
    with sqlmem.open(path, sqlmem.StoreConfig(history_search=False)) as db:
        db.history.append_many("a", [Message(role="user", content="hello")] * 3)
        db.history.append("b", Message(role="user", content="hello"))
    assert main(["search", str(path), "hello", "--history"]) == 0
    out = capsys.readouterr().out
    assert "no messages match" in out
    assert "note: 4 messages stored with history search off are not indexed" in out
    assert main(["search", str(path), "hello", "--history", "--session", "b", "--json"]) == 0
    assert "1 message stored with history search off is not indexed" in capsys.readouterr().out
    assert main(["migrate", str(path)]) == 0  # a writable open indexes them, as the note says
    capsys.readouterr()
    assert main(["search", str(path), "hello", "--history", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"note"' not in out and out.count('"content": "hello"') == 4


def test_a_read_only_memory_db_refuses_every_write(tmp_path: Path) -> None:
    """issue 23 item 4: the read-only open behind the commands fails writes, clearly."""
    path = tmp_path / "memory.db"
    make_memory(path, sqlmem.StoreConfig())
    before = files_beside(path)
    db = sqlmem.MemoryDB(path, _read_only=True)
    try:
        writes = [
            lambda: db.history.append("chat", Message(role="user", content="x")),
            lambda: db.facts.index(Fact(content="x")),
            lambda: db.history.set_summary("chat", "x"),
            db.checkpoint,
            db.vacuum,
        ]
        for write in writes:
            with pytest.raises(sqlmem.SqlmemError, match=r"read-only|readonly"):
                write()
        assert db.history.count("chat") == 200
    finally:
        db.close()
    assert files_beside(path) == before


def test_a_read_only_open_does_not_migrate_or_create(tmp_path: Path) -> None:
    path = tmp_path / "missing.db"
    with pytest.raises(sqlmem.SqlmemError):
        sqlmem.MemoryDB(path, _read_only=True)
    assert not path.exists()
    path.write_bytes(b"")
    with pytest.raises(sqlmem.MigrationError, match="cannot migrate"):
        sqlmem.MemoryDB(path, _read_only=True)
    assert path.read_bytes() == b""
