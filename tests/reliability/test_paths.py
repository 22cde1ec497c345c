"""Issue 23 item 9: paths the OS or SQLite refuse are sqlmem errors, and leave nothing.

`open()` raised a bare OSError for a name too long, PermissionError for a folder it may
not search, UnicodeEncodeError for a name that is not UTF-8 (after creating the file and
its folders); `backup()` raised RuntimeError or OSError on a symlink loop; the CLI called
all of these "a bug in sqlmem". Each must be InvalidArgumentError (the path can never
work) or SqlmemError (the OS refused), with the original error as `__cause__`, and leave
the disk as it was.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import sqlmem
from sqlmem.cli import main

TOO_LONG = "x" * 300  # longer than any file system's name limit (255 bytes on Linux)


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def clean(tmp_path: Path) -> Iterator[Path]:
    """A folder whose contents must be the same after the test as before it."""
    before = _tree(tmp_path)
    yield tmp_path
    assert _tree(tmp_path) == before, "something was left on disk"


@pytest.mark.parametrize(
    "relative",
    [
        f"{TOO_LONG}/memory.db",  # a folder name too long: nothing can be created
        f"new/folders/{TOO_LONG}.db",  # the file name: folders made first are removed
    ],
)
def test_open_with_a_name_too_long_is_an_invalid_argument(clean: Path, relative: str) -> None:
    with pytest.raises(sqlmem.InvalidArgumentError) as caught:
        sqlmem.open(clean / relative)
    assert isinstance(caught.value.__cause__, OSError)
    assert caught.value.__cause__.errno == errno.ENAMETOOLONG


@pytest.mark.parametrize(
    "name",
    [
        os.fsdecode(b"memory-\xff.db"),  # undecodable bytes, as os.listdir returns them
        "memory-\ud800.db",  # a lone surrogate that no codec round-trips
    ],
)
def test_open_a_path_that_is_not_utf8_creates_nothing(clean: Path, name: str) -> None:
    """Regression: the file and its folder were created, then apsw raised
    UnicodeEncodeError."""
    with pytest.raises(sqlmem.InvalidArgumentError, match="UTF-8") as caught:
        sqlmem.open(clean / "folder" / name)
    assert isinstance(caught.value.__cause__, UnicodeEncodeError)


def test_open_under_a_folder_it_may_not_search(
    clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: PermissionError from looking for the missing parent folders."""
    locked = clean / "locked"
    locked.mkdir()
    locked.chmod(0o000)
    if os.geteuid() == 0:  # root ignores permission bits: refuse the way the kernel would
        real_stat = os.stat

        def stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
            if str(path).startswith(f"{locked}{os.sep}"):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "stat", stat)
    try:
        with pytest.raises(sqlmem.SqlmemError) as caught:
            sqlmem.open(locked / "agent" / "memory.db")
        assert not isinstance(caught.value, sqlmem.InvalidArgumentError)  # an OS refusal
        assert isinstance(caught.value.__cause__, PermissionError)
    finally:
        locked.chmod(0o700)
    locked.rmdir()  # fails if anything was created inside


def test_backup_through_a_symlink_loop(db: sqlmem.MemoryDB, tmp_path: Path) -> None:
    """Regression: RuntimeError("Symlink loop") from Path.resolve()."""
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    before = _tree(tmp_path)
    with pytest.raises(sqlmem.InvalidArgumentError) as caught:
        db.backup(tmp_path / "loop1" / "copy.db")
    assert isinstance(caught.value.__cause__, OSError)
    assert caught.value.__cause__.errno == errno.ELOOP
    with pytest.raises(sqlmem.InvalidArgumentError, match="already exists"):
        db.backup(tmp_path / "loop1")  # the link itself: never replaced
    assert _tree(tmp_path) == before


def test_backup_with_a_name_too_long(db: sqlmem.MemoryDB, tmp_path: Path) -> None:
    before = _tree(tmp_path)
    with pytest.raises(sqlmem.InvalidArgumentError) as caught:
        db.backup(tmp_path / "backups" / TOO_LONG)
    assert isinstance(caught.value.__cause__, OSError)
    assert _tree(tmp_path) == before


def test_cli_reports_a_path_error_as_an_error_not_a_bug(
    clean: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: `sqlmem migrate` on a non-UTF-8 name said "this is a bug in sqlmem"."""
    status = main(["migrate", str(clean / os.fsdecode(b"memory-\xff.db"))])
    err = capsys.readouterr().err
    assert status == 1
    assert "bug" not in err
    assert "UTF-8" in err


def test_factory_folders_follow_the_same_path_rule(tmp_path: Path) -> None:
    """Review finding: the factory's own copy of the path rule let `~nosuchuser` raise a
    RuntimeError, and a non-UTF-8 folder pass until SQLite failed on it."""
    with pytest.raises(sqlmem.InvalidArgumentError, match="data_dir"):
        sqlmem.MemoryFactory("~sqlmem-no-such-user-xyz/memory")
    with pytest.raises(sqlmem.InvalidArgumentError, match="UTF-8"):
        sqlmem.MemoryFactory(str(tmp_path / "bad\udcff"))
    own = sqlmem.AgentMemoryConfig(data_dir="~sqlmem-no-such-user-xyz/a")
    factory = sqlmem.MemoryFactory(tmp_path / "f", agents={"a": own})
    with factory, pytest.raises(sqlmem.InvalidArgumentError, match="data_dir"):
        factory.resolve("a")
    assert list(tmp_path.iterdir()) == []
