"""Folder sync of the workspace documents, for people who edit memory in their
editor: the file-system half of `export_dir` and `import_dir`, shared by every backend.

Safety, the whole point of this module:
- Every file and folder is reached through a directory file descriptor, one path segment
  at a time, opened with O_NOFOLLOW: a symlink planted inside the folder (`MEMORY.md ->
  ~/.ssh/authorized_keys`, `memory -> /etc`) is never followed, so nothing outside the
  folder is ever read or written, whatever races with us.
- Export writes each file under a temporary name (O_EXCL, mode 0600) and renames it over
  the final name: a reader never sees half a file, and a symlink in the file's place is
  itself replaced, never its target. Folders it creates are 0700. The temporary name has
  a fixed length, so any name `write()` accepted fits the file system's limit.
- Export checks every name before it writes any file: a name longer than the folder's
  file system allows, or a document that would need to be a folder too (`a.md` beside
  `a.md/b.md`), is refused with InvalidArgumentError naming it, and nothing is written
  (not half the documents, then a failure).
- Import reads only regular `.md` files whose path is a valid document path; symlinks,
  other files (FIFOs are never opened), invalid names, non-UTF-8 text and files over the
  size limit are skipped and counted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import InvalidArgumentError, SqlmemError, map_os_error
from .documents import MAX_CONTENT_BYTES, is_doc_path, is_folder_name
from .paths import absolute_path

__all__ = ["read_folder", "write_folder"]

_log = logging.getLogger("sqlmem")

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _folder(folder: object) -> Path:
    try:
        text = os.fspath(folder)  # type: ignore[call-overload]
    except TypeError:
        raise InvalidArgumentError(
            f"folder must be a str or os.PathLike, not {type(folder).__name__}"
        ) from None
    if not isinstance(text, str) or not text or "\x00" in text:
        raise InvalidArgumentError("folder must be a non-empty path without NUL characters")
    return absolute_path(text, "folder")


def write_folder(folder: object, documents: Iterable[tuple[str, str]]) -> int:
    """Write each `(path, content)` as a file under `folder` (created 0700 if missing);
    returns how many were written (a stored path that is not a valid document path is
    skipped, with a warning)."""
    root = _folder(folder)
    rows = _checked_names(root, documents)
    try:
        for missing in reversed([p for p in (root, *root.parents) if not p.exists()]):
            with contextlib.suppress(FileExistsError):
                missing.mkdir(mode=0o700)  # each folder we create is ours alone
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise map_os_error(exc, root, "cannot open the export folder") from exc
    count = 0
    try:
        for path, content in rows:
            _write_one(root_fd, root, path, content)
            count += 1
    finally:
        os.close(root_fd)
    return count


def _checked_names(root: Path, documents: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The documents to write, once every name is known to be writable (see the module
    docstring); a stored path that is not a valid document path (written by another
    SQLite client: '../x.md' must never reach the file system) is skipped with a warning."""
    rows = []
    for path, content in documents:
        if is_doc_path(path):
            rows.append((path, content))
        else:
            _log.warning("export_dir: skipped the document %r: not a valid path", path)
    name_max = _name_max(root)
    folders = {path[:at] for path, _ in rows for at in _slashes(path)}
    for path, _ in rows:
        if path in folders:
            raise InvalidArgumentError(
                f"export_dir: document {path!r} cannot be written: other documents need a "
                f"folder of that name ({path + '/'!r}...); no file was written"
            )
        for part in path.split("/"):
            if len(part.encode("utf-8")) > name_max:
                raise InvalidArgumentError(
                    f"export_dir: document {path!r} cannot be written: {part!r} is longer "
                    f"than the {name_max} bytes a name may have there; no file was written"
                )
    return rows


def _slashes(path: str) -> Iterator[int]:
    at = path.find("/")
    while at >= 0:
        yield at
        at = path.find("/", at + 1)


def _name_max(root: Path) -> int:
    """The longest file name the export folder's file system takes (255 when unknown, or
    when the folder does not exist yet: the usual limit)."""
    for where in (root, *root.parents):
        try:
            limit = int(os.pathconf(where, "PC_NAME_MAX"))
        except (OSError, ValueError):
            continue
        return limit if limit > 0 else 255
    return 255


def _write_one(root_fd: int, root: Path, path: str, content: str) -> None:
    *folders, name = path.split("/")
    fds: list[int] = []
    where = root_fd
    try:
        for part in folders:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=where)
            try:
                where = os.open(part, _DIR_FLAGS, dir_fd=where)
            except OSError as exc:
                raise _refused(
                    exc, root / path, "a folder on the way is a symlink or a file"
                ) from exc
            fds.append(where)
        temp = f".sqlmem-{secrets.token_hex(8)}.tmp"  # hidden: import skips it; any name fits
        try:
            fd = os.open(temp, _WRITE_FLAGS, 0o600, dir_fd=where)
            try:
                data = content.encode("utf-8")
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(temp, name, src_dir_fd=where, dst_dir_fd=where)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=where)
            raise _refused(exc, root / path, "cannot write the file") from exc
    finally:
        for fd in fds:
            os.close(fd)


def _refused(exc: OSError, path: Path, why: str) -> SqlmemError:
    if exc.errno in (getattr(os, "ELOOP", -1), getattr(os, "ENOTDIR", -1)):
        mapped = SqlmemError(f"{path}: {why}; refusing to follow it")
        mapped.__cause__ = exc
        return mapped
    return map_os_error(exc, path, why)


def read_folder(folder: object) -> tuple[list[tuple[str, str]], int]:
    """The `(path, content)` of every importable file under `folder`, sorted by path, and
    the number of entries skipped."""
    root = _folder(folder)
    try:
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise map_os_error(exc, root, "cannot open the import folder") from exc
    found: list[tuple[str, str]] = []
    try:
        skipped = _walk(root_fd, "", found)
    except OSError as exc:
        raise map_os_error(exc, root, "cannot read the import folder") from exc
    finally:
        os.close(root_fd)
    found.sort()
    return found, skipped


def _walk(dir_fd: int, prefix: str, found: list[tuple[str, str]]) -> int:
    skipped = 0
    with os.scandir(dir_fd) as entries:
        names = sorted((e.name, e) for e in entries)
    for name, entry in names:
        path = prefix + name
        if entry.is_symlink():
            skipped += 1
        elif entry.is_dir(follow_symlinks=False):
            if not is_folder_name(name) or len(path) >= 255:
                skipped += 1
                continue
            try:
                sub = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
            except OSError:  # replaced by a symlink meanwhile, or unreadable
                skipped += 1
                continue
            try:
                skipped += _walk(sub, path + "/", found)
            finally:
                os.close(sub)
        elif entry.is_file(follow_symlinks=False) and is_doc_path(path):
            content = _read_file(dir_fd, name)
            if content is None:
                skipped += 1
            else:
                found.append((path, content))
        else:
            skipped += 1
    return skipped


def _read_file(dir_fd: int, name: str) -> str | None:
    """A regular file's text, or None when it is not one (anymore), too large or not UTF-8."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CONTENT_BYTES:
            return None
        chunks = []
        total = 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > MAX_CONTENT_BYTES:
                return None
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        return None
