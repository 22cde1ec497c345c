"""A database where the user may only read: a read-only folder (or mount), a 0444 file.

Regressions: in a folder that refuses new files, SQLite could not create the WAL file's
-wal and -shm companions, so `info`, `search`, `history`, `export`, `check` and
`mcp --read-only` all failed with "attempt to write a readonly database"; and opening a
0444 file for writing said "cannot create database file".

Permissions do not bind root, and CI runs as root: there each command runs through
`setpriv` with the capabilities that bypass file permissions dropped from its bounding
set, so the kernel checks the folder's and file's modes as for anybody else.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import sqlmem
from sqlmem import Fact, Message

_DROP = ["--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def _as_plain_user() -> list[str]:
    """The command prefix that makes file permissions apply to us."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be made to apply")
    return [setpriv, *_DROP]


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_as_plain_user(), sys.executable, "-m", "sqlmem", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
    )


def _snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture
def locked_folder(tmp_path: Path) -> Iterator[Path]:
    """A database with some memory in a folder nobody may add files to (mode 0555). Its
    WAL was checkpointed and removed on close: no -wal or -shm is there."""
    folder = tmp_path / "agent"
    folder.mkdir()
    path = folder / "memory.db"
    with sqlmem.open(path) as db:
        db.history.append("chat:1", Message(role="user", content="Fly me to Lisbon"))
        db.facts.index(Fact(id="f1", content="The user drinks green tea"))
        db.docs.write("MEMORY.md", "# Memory\n- likes tea\n")
    assert sorted(p.name for p in folder.iterdir()) == ["memory.db"]
    tmp_path.chmod(0o755)  # the plain user must reach the folder
    folder.chmod(0o555)
    probe = subprocess.run(
        [*_as_plain_user(), sys.executable, "-c", f"open({str(folder / 'x')!r}, 'w')"],
        capture_output=True,
        timeout=60,
    )
    assert probe.returncode != 0, "the folder still accepts new files"
    yield path
    folder.chmod(0o755)


def test_every_read_only_command_reads_a_database_in_a_read_only_folder(
    locked_folder: Path,
) -> None:
    before = _snapshot(locked_folder.parent)
    path = str(locked_folder)
    for args, expected in [
        (["info", path], "schema version"),
        (["search", path, "tea"], "green tea"),
        (["search", path, "Lisbon", "--history"], "Lisbon"),
        (["history", path, "chat:1"], "Fly me to Lisbon"),
        (["export", path], "green tea"),
        (["check", path], "ok"),
        (["sessions", path], "chat:1"),
        (["docs", path, "show", "MEMORY.md"], "likes tea"),
        (["pack", path, "tea"], "green tea"),
    ]:
        done = _run(*args)
        assert done.returncode == 0, (args, done.stderr)
        assert expected in done.stdout, (args, done.stdout)
        assert done.stderr == "", (args, done.stderr)
    assert _snapshot(locked_folder.parent) == before  # nothing written, nothing added


def test_the_read_only_mcp_server_serves_a_database_in_a_read_only_folder(
    locked_folder: Path,
) -> None:
    server = subprocess.Popen(
        [
            *_as_plain_user(),
            sys.executable,
            "-m",
            "sqlmem",
            "mcp",
            str(locked_folder),
            "--read-only",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None

    def send(message: dict[str, object]) -> None:
        assert server.stdin is not None
        server.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        server.stdin.flush()

    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        send({"id": 1, "method": "initialize", "params": hello})
        assert json.loads(server.stdout.readline())["id"] == 1
        send({"method": "notifications/initialized"})
        call = {"name": "search_memory", "arguments": {"query": "tea"}}
        send({"id": 2, "method": "tools/call", "params": call})
        reply = json.loads(server.stdout.readline())
        server.stdin.close()
        assert server.wait(timeout=60) == 0
        server.stdin = None  # closed above: communicate() must not flush it
    finally:
        if server.poll() is None:
            server.kill()
        server.communicate()  # waits, and closes the pipes
    body = json.loads(reply["result"]["content"][0]["text"])
    assert [r["content"] for r in body["results"]] == ["The user drinks green tea"]


def test_a_write_in_a_read_only_folder_is_refused_clearly(locked_folder: Path) -> None:
    done = _run("docs", str(locked_folder), "write", "MEMORY.md", stdin="new text")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and done.stderr.startswith("sqlmem: error:")
    assert "memory.db-wal" in done.stderr and "it can only be read" in done.stderr


def test_a_0444_file_is_reported_read_only_not_uncreatable(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with sqlmem.open(path) as db:
        db.facts.index(Fact(content="kept"))
    path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    tmp_path.chmod(0o755)
    try:
        code = (
            "import sqlmem\n"
            "try:\n"
            f"    sqlmem.open({str(path)!r})\n"
            "except sqlmem.SqlmemError as exc:\n"
            "    print(exc)\n"
        )
        done = subprocess.run(
            [*_as_plain_user(), sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert "read-only" in done.stdout and "cannot create" not in done.stdout, done.stdout
        migrate = _run("migrate", str(path))
        assert migrate.returncode == 1 and "read-only" in migrate.stderr, migrate.stderr
        info = _run("info", str(path))  # reading it still works
        assert info.returncode == 0 and "facts" in info.stdout, info.stderr
    finally:
        path.chmod(0o600)
