"""Opening connections: the one place where files are created and pragmas are set.

Every connection, writer or reader, goes through `connect()`, one small function per
setting in the spirit of `apsw.bestpractice`. Files are created by us before SQLite sees
them, so their mode is 0600 whatever the umask; SQLite gives the -wal and -shm files the
mode of the database file.

Checkpoints (`WalCheckpointer`): SQLite's auto-checkpoint is PASSIVE, and a WAL can only
start again from its beginning when no reader holds a snapshot that uses it. With readers
that overlap all the time (a few threads reading in a loop), that moment never comes and
the WAL grows without bound (measured: 20,000 appends with three reading threads left a
760 MB WAL). So the writer's WAL hook replaces the auto-checkpoint: PASSIVE as before, and
when the WAL is still long after several of those, a RESTART checkpoint that waits a short
while for the readers to let go, so the next commit starts the WAL again. Readers that
each hold their snapshot for a second or two, staggered, never leave such a gap (measured:
a 2.57 GB WAL in 60 s): then the last resort pauses this process's new reads until the
reads in flight have ended, and restarts the WAL in that moment.
"""

from __future__ import annotations

import errno
import os
import time
import urllib.parse
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import apsw

from ...config import StoreConfig
from ...errors import (
    CorruptDatabaseError,
    SqlmemError,
    StorageBusyError,
    map_os_error,
)
from ..apsw_errors import translate_errors

__all__ = [
    "WalCheckpointer",
    "check_is_database",
    "connect",
    "ensure_file",
    "ensure_folder",
    "install_checkpointer",
    "remove_folders",
    "require_fts5",
    "set_wal",
]

FILE_MODE = 0o600
DIR_MODE = 0o700

#: The WAL file is truncated back to this size after a checkpoint, so a burst of writes
#: does not leave a large file behind for ever.
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024

#: A PASSIVE checkpoint runs after a commit that leaves at least this many WAL frames
#: (SQLite's own default auto-checkpoint threshold).
AUTOCHECKPOINT_PAGES = 1000

#: A WAL of this many frames means PASSIVE checkpoints could not let it start again
#: (readers always held a snapshot): the writer then runs a RESTART checkpoint. With 4 KiB
#: pages the WAL stays below about 16 MB plus one transaction under any read load that
#: lets go of its snapshots within RESTART_WAIT_MS.
RESTART_PAGES = 4 * AUTOCHECKPOINT_PAGES

#: How long a RESTART checkpoint first waits for readers (never more than the busy
#: timeout). Our own readers hold a snapshot for one statement, usually far shorter, but a
#: search scoring a common word while threads fight over the GIL can hold it for hundreds
#: of ms. When the wait runs out, the next try comes AUTOCHECKPOINT_PAGES frames later and
#: waits twice as long, the one after twice as many frames later, and so on. A
#: reader that keeps one snapshot for long (another process, a shell inside BEGIN) pins
#: the WAL whatever we do: the doubling distance between tries bounds what it costs the
#: writer to a few waits (a logarithm of the WAL's growth).
RESTART_WAIT_MS = 200


def ensure_file(path: Path) -> None:
    """Create missing parent folders (0700) and the database file (0600).

    All or nothing: when the file cannot be created, the folders made for it are removed
    again. Every OS failure, including those of looking at the parents (a name too long,
    a folder we may not search), is a sqlmem error with the OSError as cause.
    """
    created = ensure_folder(path.parent)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        os.close(fd)
    except OSError as exc:
        remove_folders(created)
        if exc.errno in _READ_ONLY_ERRNOS and os.path.isfile(path):  # it exists: not created
            what = "database file is read-only, it can only be read"
            raise map_os_error(exc, path, what) from exc
        raise map_os_error(exc, path, "cannot create database file") from exc


#: What opening an existing file for writing fails with when we may only read it.
_READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


def ensure_folder(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents (0700); returns those it created.

    On failure, removes what it created and raises a sqlmem error (see `map_os_error`).
    """
    created: list[Path] = []
    try:
        for missing in _missing_folders(folder):
            try:
                missing.mkdir(mode=DIR_MODE)
            except FileExistsError:  # made meanwhile by another process: not ours
                continue
            created.append(missing)
            os.chmod(missing, DIR_MODE)  # mkdir's mode is filtered by the umask
    except OSError as exc:
        remove_folders(created)
        raise map_os_error(exc, folder, "cannot create folder") from exc
    return created


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and its parents that do not exist yet, outermost first.

    os.stat rather than Path.exists(), which turns some errors into False and lets
    others (EACCES, ENAMETOOLONG) escape: every error but "no such file" propagates.
    """
    missing: list[Path] = []
    while True:
        try:
            os.stat(folder)
        except FileNotFoundError:
            missing.append(folder)
            if folder.parent == folder:
                break
            folder = folder.parent
            continue
        break
    missing.reverse()
    return missing


def remove_folders(created: list[Path]) -> None:
    """Remove folders `ensure_folder` created, innermost first; best effort."""
    for folder in reversed(created):
        try:
            folder.rmdir()
        except OSError:
            break  # not empty (someone else's file) or gone: leave the rest


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


def _plans_ignore_bound_values(conn: apsw.Connection, config: StoreConfig) -> None:
    """Statements are compiled once per connection, not at every call.

    Left to itself SQLite lets a plan look at bound values (a LIMIT, a value compared
    with an indexed column before an ORDER BY), and a statement whose plan did is
    compiled again each time a new value is bound. That hit `get_recent` (~13 µs of
    ~30 for 20 messages) and, above all, FTS5's own statement that finds a query word in
    each index segment: compiled again per word and segment, it was ~35% of a search
    of 10,000 facts. With the query planner stability guarantee a plan never depends on
    a bound value; ours never need to (each is pinned by a test, with and without
    ANALYZE statistics)."""
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, 1)


#: How the writer's checkpointer pauses this process's reads: a context manager taking
#: the longest wait in seconds and yielding whether every read in flight ended within it
#: (Engine.readers_paused).
PauseReaders = Callable[[float], AbstractContextManager[bool]]

#: The share of the busy timeout the last resort may wait for reads in flight: the write
#: lock is held meanwhile, so other writers of this process must still get their turn.
READER_DRAIN_SHARE = 0.5


class WalCheckpointer:
    """The WAL hook of the writer: SQLite's auto-checkpoint, plus a cure for starvation.

    Runs on the writer's thread right after each commit, while the writer lock of this
    process is still held; it never raises (a checkpoint that cannot finish now is only
    housekeeping, the commit has happened).

    Once the WAL holds RESTART_PAGES frames: a RESTART checkpoint that waits
    RESTART_WAIT_MS for readers; if readers still hold old snapshots, the last resort
    (`pause_readers`): new reads of this process wait while the reads in flight end (at
    most READER_DRAIN_SHARE of the busy timeout), then RESTART again. So with readers of
    this process only, the WAL stays within about RESTART_PAGES frames plus one
    transaction, however its reads overlap, as long as a single read is shorter than that
    wait. A reader of another process that keeps its snapshot pins the WAL whatever we do:
    the next try comes later each time (doubling), so it costs the writer a few waits.
    """

    def __init__(
        self,
        busy_timeout_ms: int,
        pause_readers: PauseReaders | None = None,
        *,
        defer_passive: bool = False,
    ) -> None:
        self._busy_timeout_ms = busy_timeout_ms
        self._pause_readers = pause_readers
        #: Leave PASSIVE checkpoints to the owner (`passive_due`), which runs them on
        #: another connection once this process's write lock is free: run
        #: here, a checkpoint's page copy and fsyncs (tens of ms under load) held every
        #: other writer of the process, while a plain SQLite connection checkpoints after
        #: it let go of the write lock.
        self.defer_passive = defer_passive
        #: Set when a PASSIVE checkpoint is due and `defer_passive` leaves it to the owner.
        self.passive_due = False
        self._restart_at = RESTART_PAGES
        self._failures = 0  # RESTART checkpoints in a row that gave up
        #: How many RESTART checkpoints ran / gave up / needed reads paused (for tests
        #: and monitoring).
        self.restarts = 0
        self.restarts_failed = 0
        self.reader_pauses = 0

    def __call__(self, conn: apsw.Connection, dbname: str, pages: int) -> int:
        if pages < AUTOCHECKPOINT_PAGES:
            return apsw.SQLITE_OK
        try:
            if pages < self._restart_at:
                if self.defer_passive:
                    self.passive_due = True
                else:
                    conn.wal_checkpoint(dbname, apsw.SQLITE_CHECKPOINT_PASSIVE)
            elif self._restart(conn, dbname):
                self.restarts += 1
                self._restart_at = RESTART_PAGES
                self._failures = 0
            else:
                self.restarts_failed += 1
                self._restart_at = pages + (AUTOCHECKPOINT_PAGES << min(self._failures, 8))
                self._failures += 1
        except apsw.Error:
            pass  # e.g. another process is checkpointing: a later commit tries again
        return apsw.SQLITE_OK

    def _restart(self, conn: apsw.Connection, dbname: str) -> bool:
        if self._try_restart(conn, dbname):
            return True
        if self._pause_readers is None:
            return False
        self.reader_pauses += 1
        with self._pause_readers(self._busy_timeout_ms * READER_DRAIN_SHARE / 1000) as drained:
            return drained and self._try_restart(conn, dbname)

    def _try_restart(self, conn: apsw.Connection, dbname: str) -> bool:
        conn.set_busy_timeout(min(self._busy_timeout_ms, RESTART_WAIT_MS))
        try:
            conn.wal_checkpoint(dbname, apsw.SQLITE_CHECKPOINT_RESTART)
        except apsw.BusyError:
            return False
        finally:
            conn.set_busy_timeout(self._busy_timeout_ms)
        return True


def install_checkpointer(
    conn: apsw.Connection,
    config: StoreConfig,
    pause_readers: PauseReaders | None = None,
    *,
    defer_passive: bool = False,
) -> WalCheckpointer:
    """Make `conn` (the writer) checkpoint with a WalCheckpointer; a WAL hook replaces
    SQLite's auto-checkpoint. Readers never commit and need none."""
    checkpointer = WalCheckpointer(
        config.busy_timeout_ms, pause_readers, defer_passive=defer_passive
    )
    conn.set_wal_hook(checkpointer)
    return checkpointer


_SETTINGS = (
    _busy_timeout,
    _synchronous,
    _foreign_keys,
    _no_double_quoted_strings,
    _recursive_triggers,
    _journal_size_limit,
    _trusted_schema_off,
    _plans_ignore_bound_values,
)


def connect(
    path: Path, config: StoreConfig, *, create: bool = False, read_only: bool = False
) -> apsw.Connection:
    """A configured connection to an existing (or, with `create`, new) database file.

    `read_only` (a connection that will never write, see `readonly.py`): a WAL file in a
    folder where its -wal and -shm files cannot be created (a read-only folder or mount)
    is still readable, see `_immutable`."""
    if create:
        ensure_file(path)
    elif not path.exists():
        raise SqlmemError(f"{path}: no such database file")
    with translate_errors(str(path)):
        try:
            return _configured(str(path), apsw.SQLITE_OPEN_READWRITE, config)
        except apsw.ReadOnlyError as exc:
            if not _no_wal_files(path):
                raise
            if not read_only:
                raise SqlmemError(
                    f"{path}: database is read-only here: SQLite cannot create its "
                    f"{path.name}-wal and {path.name}-shm files in this folder; "
                    "it can only be read"
                ) from exc
        return _configured(_immutable(path), apsw.SQLITE_OPEN_READONLY | _URI, config)


_URI = apsw.SQLITE_OPEN_URI


def _configured(name: str, flags: int, config: StoreConfig) -> apsw.Connection:
    conn = apsw.Connection(name, flags=flags)
    try:
        for setting in _SETTINGS:
            setting(conn, config)
    except BaseException:
        conn.close()
        raise
    return conn


def _no_wal_files(path: Path) -> bool:
    return not os.path.lexists(f"{path}-wal") and not os.path.lexists(f"{path}-shm")


def _immutable(path: Path) -> str:
    """The URI that reads a WAL file without its -wal and -shm files.

    SQLite reads a WAL database only through its -shm file (and creates the -wal), so in
    a folder that refuses new files, even a read fails ("attempt to write a readonly
    database"). `immutable=1` tells SQLite the file cannot change, so it needs neither
    and takes no locks. Used only when that holds: the read-write open failed for want
    of those files, and none is there, so no process is writing the file in WAL mode (a
    writer would have created them, which needs the same folder write permission that
    we lack) and no committed transaction waits in a WAL to be read. A writer with more
    rights than ours starting while we read is the one case it does not cover: the
    reads may then miss its writes; the file itself is never changed by us."""
    quoted = urllib.parse.quote(str(path.resolve()), safe="/")
    return f"file:{quoted}?immutable=1"


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
