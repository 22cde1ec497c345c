"""`sqlmem export -o` never harms the database and leaves no copy of the memory behind."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import sqlmem
from sqlmem import Fact
from sqlmem.cli import main


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    path = tmp_path / "dir" / "memory.db"
    with sqlmem.open(path) as db:
        db.facts.index_many(Fact(content=f"fact number {i}") for i in range(20))
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` with its bytes (symbolic links as their target)."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = Path(root, name)
            found[str(path.relative_to(folder))] = (
                os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            )
    return found


# -- issue 23 item 5: the output cannot be the database ----------------------------------------


@pytest.mark.parametrize(
    "spelling",
    [
        "dir/memory.db",
        "dir/sub/../memory.db",  # the attack: 'sub' does not even exist
        "dir/./memory.db",
        "dir//memory.db",
        "dir/memory.db-wal",
        "dir/memory.db-shm",
        "dir/memory.db-journal",
        "dir/sub/../memory.db-shm",
        "link-to-db",
        "link-to-dir/memory.db",
        "link-to-dir/memory.db-wal",
        "hard-link",
    ],
)
def test_export_refuses_the_database_under_any_spelling(
    memory: Path, spelling: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 23 item 5: the guard compared unresolved paths (and forgot -shm), so
    `-o dir/sub/../memory.db` replaced the database with JSON."""
    root = memory.parent.parent
    (root / "link-to-db").symlink_to(memory)
    (root / "link-to-dir").symlink_to(memory.parent, target_is_directory=True)
    os.link(memory, root / "hard-link")
    before = snapshot(root)
    status = main(["export", str(memory), "-o", str(root / spelling)])
    _, err = capsys.readouterr()
    assert status == 1 and "refusing to overwrite the database" in err
    assert snapshot(root) == before  # nothing replaced, no folder 'sub' made, no temp file


def test_export_through_a_linked_database_refuses_its_real_files(
    memory: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 23 item 5: SQLite keeps the -wal beside the link's target, not the link."""
    link = tmp_path / "elsewhere" / "alias.db"
    link.parent.mkdir()
    link.symlink_to(memory)
    before = snapshot(tmp_path)
    for output in (memory, Path(f"{memory}-wal"), Path(f"{memory}-shm")):
        assert main(["export", str(link), "-o", str(output)]) == 1
    assert snapshot(tmp_path) == before
    assert "refusing to overwrite" in capsys.readouterr().err


def test_export_next_to_the_database_still_works(
    memory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = memory.parent / "sub" / ".." / "memory.db.jsonl"
    assert main(["export", str(memory), "-o", str(out)]) == 0
    assert len((memory.parent / "memory.db.jsonl").read_text().splitlines()) == 21
    assert not (memory.parent / "sub").exists()


# -- issue 23 item 14: modes of what export creates --------------------------------------------


@pytest.fixture
def umask_000() -> Iterator[None]:
    previous = os.umask(0)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("umask_000")
def test_export_creates_folders_0700_and_the_file_0600(
    memory: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 23 item 14: `export -o new/dir/...` made its folders 0777 under umask 000."""
    existing = tmp_path / "existing"
    existing.mkdir(mode=0o755)
    out = existing / "new" / "dir" / "memory.jsonl"
    assert main(["export", str(memory), "-o", str(out)]) == 0, capsys.readouterr().err
    assert stat.S_IMODE((existing / "new").stat().st_mode) == 0o700
    assert stat.S_IMODE((existing / "new" / "dir").stat().st_mode) == 0o700
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert stat.S_IMODE(existing.stat().st_mode) == 0o755  # not made by export: untouched


# -- issue 23 item 18: a signal mid-export leaves no partial copy ------------------------------

# The export's facts are read through `sqlmem.sqlite.transfer.export._facts`; the child pauses
# it after the first fact, with the temporary file open, and says so: the signal then arrives
# mid-export every time, however loaded the machine (no timing guess).
CHILD = """
import sys
import sqlmem.sqlite.transfer.export as transfer
from sqlmem.cli import main

read_facts = transfer._facts

def facts_then_pause(db):
    for number, record in enumerate(read_facts(db)):
        yield record
        if number == 0:
            sys.stdout.write("paused\\n")
            sys.stdout.flush()
            sys.stdin.read()  # until a signal arrives (or the test closes stdin)

transfer._facts = facts_then_pause
sys.exit(main(["export", sys.argv[1], "-o", sys.argv[2]]))
"""


@pytest.mark.parametrize(
    ("signum", "status", "message"),
    [
        (signal.SIGTERM, 128 + signal.SIGTERM, "terminated"),
        (signal.SIGHUP, 128 + signal.SIGHUP, "terminated"),
        (signal.SIGINT, 130, "interrupted"),
    ],
)
def test_a_signal_mid_export_removes_the_temporary_file(
    memory: Path, tmp_path: Path, signum: int, status: int, message: str
) -> None:
    """issue 23 item 18: SIGTERM during `export -o` left `.memory.jsonl.XXXX.tmp`, a
    partial hidden copy of the memory; the target must stay as it was."""
    out_dir = tmp_path / "exports"
    out_dir.mkdir()
    target = out_dir / "memory.jsonl"
    target.write_bytes(b"the previous export\n")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(memory), str(target)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        ready = child.stdout.readline()
        temps = [p.name for p in out_dir.iterdir() if p != target]
        assert ready == b"paused\n", child.communicate(timeout=60)
        assert len(temps) == 1 and temps[0].startswith(".memory.jsonl.")  # mid-export
        child.send_signal(signum)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == status, err
    assert err.decode() == f"sqlmem: error: {message}\n"
    assert [p.name for p in out_dir.iterdir()] == ["memory.jsonl"]
    assert target.read_bytes() == b"the previous export\n"
