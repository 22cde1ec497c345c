"""An agent's files under the factory's data_dir: what may lie on the way to them, and
what a failed open of one says."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import apsw

from ..errors import InvalidArgumentError, SqlmemError, map_os_error
from ..sqlite.apsw_errors import map_apsw_error

__all__ = ["open_error", "refuse_links_below"]


def refuse_links_below(data_dir: Path, db_file: Path) -> None:
    """InvalidArgumentError if a symlink lies between `data_dir` and the agent's files.

    The rule: below the factory's `data_dir`, sqlmem follows no symlink (`agents/`, the
    agent's folder, `memory.db` and its `-wal`/`-shm`). A link there could put an agent's
    memory anywhere on disk (files created outside `data_dir`), or give two agents one
    file (two writers, two memories mixed). `data_dir` itself may be a link, and an agent
    with a `data_dir` of its own is not checked: both are the user's explicit choice.
    Checked before anything is created; a link made after the check is not seen.
    """
    parts = db_file.relative_to(data_dir).parts
    folders = [data_dir.joinpath(*parts[:i]) for i in range(1, len(parts))]
    files = [db_file, Path(f"{db_file}-wal"), Path(f"{db_file}-shm")]
    for candidate in folders + files:
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            if candidate in folders:
                return  # nothing below a missing folder exists yet
            continue
        except OSError as exc:
            raise map_os_error(exc, candidate, "cannot use the agent's folder") from exc
        if stat.S_ISLNK(info.st_mode):
            raise InvalidArgumentError(
                f"{candidate} is a symbolic link: an agent's files under the factory's "
                f"data_dir ({data_dir}) must not go through links (give the agent a data_dir "
                "of its own to keep its memory elsewhere)"
            )


def open_error(agent_id: str, path: Path, exc: BaseException) -> BaseException:
    """The error a failed open raises: sqlmem errors as they are, anything else wrapped."""
    if isinstance(exc, SqlmemError) or not isinstance(exc, Exception):
        return exc  # already ours, or KeyboardInterrupt and friends
    if isinstance(exc, apsw.Error):
        return map_apsw_error(exc, f"agent {agent_id!r}: {path}")
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc)
        return SqlmemError(f"agent {agent_id!r}: cannot open {path} ({reason})")
    return exc
