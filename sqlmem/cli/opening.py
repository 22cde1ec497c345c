"""Opening a database for a command without surprising its owner.

`sqlmem.open` creates missing files and applies pending migrations, which is right for a
program's own memory but wrong for a person inspecting one: `sqlmem info typo.db` must not
leave a new file behind, and looking at a file must not upgrade its schema. So read-only
commands check the path and read the schema version with a plain connection first, and
only open files that are already at the version this sqlmem writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import StoreConfig
from ..errors import SqlmemError
from ..sqlite.apsw_errors import translate_errors
from ..sqlite.core.connection import check_is_database, connect
from ..sqlite.core.migrations import latest_version, read_user_version, refuse_foreign_files
from ..sqlite.core.readonly import make_read_only, wal_has_frames
from ..sqlite.db import MemoryDB, resolve_path

__all__ = ["CommandError", "existing_path", "open_existing", "schema_version"]


class CommandError(SqlmemError):
    """A command cannot run on what it was given (missing file, wrong kind of file)."""


def existing_path(path: str) -> Path:
    """The resolved path of an existing regular file, or a CommandError saying why not."""
    resolved = resolve_path(path)
    if not resolved.exists():
        raise CommandError(f"{resolved}: no such file")
    if resolved.is_dir():
        raise CommandError(f"{resolved}: is a directory, not a database file")
    return resolved


def schema_version(path: Path) -> int:
    """The file's schema version (0: no sqlmem schema), read without changing anything.

    The file is vetted as an open would (a foreign file, an edited or missing ledger, a
    newer schema raise), so describing an older file never vouches for one that is not
    ours: `info` used to report "version 1, run migrate" for any file whose user_version
    another program had set to 1, once a second migration existed.
    """
    keep_wal = wal_has_frames(path)
    conn = connect(path, StoreConfig(), read_only=True)
    try:
        make_read_only(conn, path, keep_wal=keep_wal)  # closing it must not checkpoint
        check_is_database(conn, path)
        refuse_foreign_files(conn, path)
        with translate_errors(str(path)):
            return read_user_version(conn)
    finally:
        conn.close()


def open_existing(path: str, embedder: Any = None) -> MemoryDB:
    """Open an existing sqlmem database that is already at the latest schema (read-only;
    an `embedder` only embeds queries)."""
    resolved = existing_path(path)
    version = schema_version(resolved)
    latest = latest_version()
    if version == 0:
        raise CommandError(
            f"{resolved}: not a sqlmem database (no sqlmem schema); "
            f"'sqlmem migrate {path}' makes it one"
        )
    if version < latest:
        raise CommandError(
            f"{resolved}: schema version {version} is older than {latest}; "
            f"run 'sqlmem migrate {path}' first"
        )
    # Read-only: no WAL switch, no open hook, no optimize, no write lock, so
    # inspecting a file another process writes never changes or blocks it. A
    # newer schema raises SchemaTooNewError, file untouched.
    return MemoryDB(resolved, embedder=embedder, _read_only=True)
