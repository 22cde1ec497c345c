"""`MemoryDB.backup()`: a consistent copy of a live database, published under its name
only once complete; and the SQLite backup copy that `check()` also reads from.
"""

from __future__ import annotations

import errno
import os
import secrets
from contextlib import suppress
from pathlib import Path

import apsw

from ...errors import InvalidArgumentError, map_os_error
from ..apsw_errors import translate_errors
from .connection import FILE_MODE, ensure_folder, remove_folders
from .engine import Engine

__all__ = ["backup", "copy_into", "same_file"]


def backup(engine: Engine, dest: Path) -> Path:
    """Copy the database to `dest` (absolute, see `db.resolve_path`); the rules are
    `MemoryDB.backup`'s. Written under a temporary name in the destination folder first."""
    _refuse_existing_dest(dest, engine.path)
    created = ensure_folder(dest.parent)
    temp = dest.parent / f".sqlmem-backup-{secrets.token_hex(8)}.tmp"
    try:
        try:
            os.close(os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL, FILE_MODE))
        except OSError as exc:
            raise map_os_error(exc, dest, "cannot create the backup") from exc
        target = copy_into(engine, str(temp), str(dest))
        with translate_errors(str(dest)):
            target.close()
        _publish(temp, dest)
    except BaseException:
        for leftover in (temp, Path(f"{temp}-journal")):
            with suppress(OSError):
                leftover.unlink()
        remove_folders(created)
        raise
    return dest


def copy_into(engine: Engine, target_path: str, context: str) -> apsw.Connection:
    """SQLite's backup of the database into `target_path` ('' opens a private temporary
    file, deleted on close); returns the target connection, open."""
    with engine.long_read() as source, translate_errors(context):
        target = apsw.Connection(target_path)
        try:
            # Not `with job:`: when the file system fails, apsw's Backup.__exit__ can
            # raise SystemError ("returned a result with an exception set") instead of
            # the apsw error (tests/reliability/test_io_faults.py). step, then finish.
            job = target.backup("main", source, "main")
            try:
                job.step(-1)
            finally:
                job.finish()
        except BaseException:
            target.close()
            raise
    return target


def _refuse_existing_dest(dest: Path, database: Path) -> None:
    """InvalidArgumentError unless nothing exists at `dest` (nor its journal files).

    The rule is "never replace": an existing file may be another program's database, this
    database itself under another spelling, or an earlier backup someone still needs; a
    sqlmem-looking file is no safer to overwrite (it may be another agent's live memory).
    """
    for candidate in (dest, Path(f"{dest}-wal"), Path(f"{dest}-journal")):
        try:
            os.lstat(candidate)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise map_os_error(exc, dest, "backup: cannot use dest_path") from exc
        if candidate == dest and same_file(dest, database):
            raise InvalidArgumentError(
                f"backup: dest_path {str(dest)!r} is the database itself (a link or another "
                "spelling of its path)"
            )
        raise InvalidArgumentError(
            f"backup: {str(candidate)!r} already exists; backup never replaces a file "
            "(remove it first, or choose another dest_path)"
        )


def same_file(a: Path, b: Path) -> bool:
    """True when both exist and are one file (a hard link is another name for it)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False  # a dangling link, say: not the database


def _publish(temp: Path, dest: Path) -> None:
    """Give the finished copy its name without replacing a file that appeared meanwhile.

    A hard link fails if `dest` exists (rename would silently replace it); file systems
    without hard links fall back to a rename after checking again.
    """
    try:
        os.link(temp, dest)
    except FileExistsError as exc:
        raise InvalidArgumentError(
            f"backup: {str(dest)!r} appeared while the backup was written; not replaced"
        ) from exc
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise map_os_error(exc, dest, "cannot name the backup") from exc
        _refuse_existing_dest(dest, temp)
        try:
            os.rename(temp, dest)
        except OSError as rename_exc:
            raise map_os_error(rename_exc, dest, "cannot name the backup") from rename_exc
    else:
        with suppress(OSError):
            temp.unlink()
    _sync_folder(dest.parent)


def _sync_folder(folder: Path) -> None:
    """Make the new name durable (best effort: not every platform can fsync a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


#: link() errors that mean "this file system has no hard links" rather than a failure.
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV})
