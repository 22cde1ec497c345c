"""Opening connections: the one place where files are created and pragmas are set.

Every connection, writer or reader, goes through `connect()`, one small function per
setting in the spirit of `apsw.bestpractice`. Files are created by us before SQLite sees
them, so their mode is 0600 whatever the umask; SQLite gives the -wal and -shm files the
mode of the database file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import apsw

from .config import StoreConfig
from .errors import CorruptDatabaseError, SqlmemError, StorageBusyError, translate_errors

__all__ = ["check_is_database", "connect", "ensure_file", "require_fts5", "set_wal"]

FILE_MODE = 0o600
DIR_MODE = 0o700

#: The WAL file is truncated back to this size after a checkpoint, so a burst of writes
#: does not leave a large file behind for ever.
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024


def ensure_file(path: Path) -> None:
    """Create missing parent folders (0700) and the database file (0600)."""
    missing = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    try:
        for folder in reversed(missing):
            folder.mkdir(mode=DIR_MODE, exist_ok=True)
            os.chmod(folder, DIR_MODE)  # mkdir's mode is filtered by the umask
        fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        os.close(fd)
    except OSError as exc:
        raise SqlmemError(f"{path}: cannot create database file ({exc.strerror})") from exc


def _busy_timeout(conn: apsw.Connection, config: StoreConfig) -> None:
    conn.set_busy_timeout(config.busy_timeout_ms)


def _synchronous(conn: apsw.Connection, config: StoreConfig) -> None:
    conn.pragma("synchronous", config.synchronous)


def _foreign_keys(conn: apsw.Connection, config: StoreConfig) -> None:
    conn.pragma("foreign_keys", "ON")


def _no_double_quoted_strings(conn: apsw.Connection, config: StoreConfig) -> None:
    """A typo'd identifier must be an error, not a string literal."""
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)


def _recursive_triggers(conn: apsw.Connection, config: StoreConfig) -> None:
    """Upserts must fire delete triggers, so the FTS index never keeps old words."""
    conn.pragma("recursive_triggers", "ON")


def _journal_size_limit(conn: apsw.Connection, config: StoreConfig) -> None:
    conn.pragma("journal_size_limit", JOURNAL_SIZE_LIMIT)


def _trusted_schema_off(conn: apsw.Connection, config: StoreConfig) -> None:
    """A hostile file cannot run functions from triggers or views we did not write."""
    conn.pragma("trusted_schema", "OFF")


_SETTINGS = (
    _busy_timeout,
    _synchronous,
    _foreign_keys,
    _no_double_quoted_strings,
    _recursive_triggers,
    _journal_size_limit,
    _trusted_schema_off,
)


def connect(path: Path, config: StoreConfig, *, create: bool = False) -> apsw.Connection:
    """A configured connection to an existing (or, with `create`, new) database file."""
    flags = apsw.SQLITE_OPEN_READWRITE
    if create:
        ensure_file(path)
    elif not path.exists():
        raise SqlmemError(f"{path}: no such database file")
    with translate_errors(str(path)):
        conn = apsw.Connection(str(path), flags=flags)
        try:
            for setting in _SETTINGS:
                setting(conn, config)
        except BaseException:
            conn.close()
            raise
    return conn


def set_wal(conn: apsw.Connection, path: Path, config: StoreConfig) -> None:
    """Switch the file to WAL (or rollback journal) mode, waiting out a concurrent opener.

    Changing the journal mode does not call the busy handler, so two processes creating
    the same file at once would see SQLITE_BUSY at once; we retry until the busy timeout.
    """
    wanted = "wal" if config.wal else "delete"
    deadline = time.monotonic() + config.busy_timeout_ms / 1000
    delay = 0.001
    while True:
        try:
            with translate_errors(str(path)):
                mode = conn.pragma("journal_mode", wanted)
            break
        except StorageBusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
    if str(mode).lower() != wanted:
        raise SqlmemError(f"{path}: could not switch journal mode to {wanted} (got {mode})")


def require_fts5(conn: apsw.Connection, path: Path) -> None:
    with translate_errors(str(path)):
        options = {row[0] for row in conn.execute("PRAGMA compile_options")}
    if "ENABLE_FTS5" not in options:
        raise SqlmemError("this SQLite build has no FTS5; install an apsw wheel that includes it")


def check_is_database(conn: apsw.Connection, path: Path) -> None:
    """Read the header now so a non-database file fails with a clear error at open."""
    try:
        with translate_errors(str(path)):
            conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()
    except CorruptDatabaseError as exc:
        raise CorruptDatabaseError(f"{path}: not a SQLite database (or damaged)") from exc
