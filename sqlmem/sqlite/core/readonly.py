"""What makes a connection read-only: the pieces of the read-only engine and CLI.

A read-only open (see sqlite/engine.py) must never change the file's bytes: its
connections are `query_only`, a WAL with frames found at open is never checkpointed into
the file when they close, and a file that would need migrating is refused untouched.
"""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from ...errors import MigrationError
from ..apsw_errors import translate_errors
from .migrations import latest_version, read_user_version

__all__ = ["make_read_only", "require_latest_schema", "wal_has_frames"]


def wal_has_frames(path: Path) -> bool:
    """True when a WAL with content is beside `path` (checked before connecting)."""
    try:
        return os.stat(f"{path}-wal").st_size > 0
    except OSError:  # no WAL (or unreadable: SQLite will say so)
        return False


def make_read_only(conn: apsw.Connection, path: Path, *, keep_wal: bool) -> None:
    """A connection that cannot write the file: `query_only` (a write, BEGIN IMMEDIATE
    included, fails at once, so no write lock is taken) and, with `keep_wal` (see
    `wal_has_frames`), no checkpoint of that WAL into the file when it closes last."""
    with translate_errors(str(path)):
        conn.pragma("query_only", "ON")
        if keep_wal:
            conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)


def require_latest_schema(conn: apsw.Connection, path: Path) -> None:
    """A read-only open cannot migrate: an older (or empty) file is refused untouched.

    `refuse_foreign_files` already refused newer and foreign files.
    """
    with translate_errors(str(path)):
        version = read_user_version(conn)
    latest = latest_version()
    if version != latest:
        raise MigrationError(
            f"{path}: schema version {version} is not the latest ({latest}); a read-only "
            "open cannot migrate it"
        )
