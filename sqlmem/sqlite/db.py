"""`sqlmem.open()` and `MemoryDB`: one agent's memory file, its two stores, maintenance."""

from __future__ import annotations

import errno
import os
import secrets
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import apsw

from ..config import StoreConfig
from ..errors import (
    CorruptDatabaseError,
    InvalidArgumentError,
    SqlmemError,
    StorageBusyError,
    map_os_error,
    translate_errors,
)
from .connection import FILE_MODE, connect, ensure_folder, remove_folders
from .engine import Engine
from .facts import SQLiteFactStore
from .history import SQLiteHistoryStore, finish_purges, index_unsearchable_messages
from .migrations import read_user_version

__all__ = ["CheckReport", "MemoryDB", "open", "resolve_path"]

_FTS_TABLES = ("messages_fts", "facts_fts")

_CHECKPOINT_PASSIVE = "PRAGMA wal_checkpoint(PASSIVE)"
_CHECKPOINT_TRUNCATE = "PRAGMA wal_checkpoint(TRUNCATE)"

_HAS_STAT4 = "SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_stat4'"

_STATS = """
SELECT
    (SELECT count(*) FROM sessions WHERE typeof(session_id) = 'text'),  -- not detached
    (SELECT coalesce(sum(last_seq - archived_seq), 0) FROM sessions),
    (SELECT coalesce(sum(archived_seq), 0) FROM sessions),
    (SELECT count(*) FROM facts)
"""


@dataclass(frozen=True)
class CheckReport:
    """What `MemoryDB.check()` found; `ok` is True for a healthy file."""

    path: str
    ok: bool
    problems: list[str] = field(default_factory=list)


def resolve_path(path: str | os.PathLike[str]) -> Path:
    """`path` as an absolute Path, or InvalidArgumentError if it can never be a database."""
    try:
        text = os.fspath(path)
    except TypeError:
        raise InvalidArgumentError(
            f"path must be a str or os.PathLike, not {type(path).__name__}"
        ) from None
    if not isinstance(text, str) or not text:
        raise InvalidArgumentError("path must be a non-empty file path")
    if text == ":memory:" or text.startswith("file:"):
        raise InvalidArgumentError(
            "path: ':memory:' and URIs are not supported (WAL needs a file); use "
            "InMemoryHistoryStore / InMemoryFactStore for memory-only stores"
        )
    if "\x00" in text:
        raise InvalidArgumentError("path must not contain NUL characters")
    try:
        # SQLite takes file names as UTF-8: a name with a lone surrogate (os.fsdecode of
        # bytes that are not UTF-8) could be created by Python but never opened by SQLite,
        # so it is refused before anything is created.
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"path {text!r} is not valid UTF-8 (undecodable bytes?): SQLite cannot open it"
        ) from exc
    try:
        return Path(text).expanduser().absolute()
    except RuntimeError as exc:  # "~user" of an unknown user, no home directory
        raise InvalidArgumentError(f"path {text!r}: {exc}") from exc
    except OSError as exc:  # the current directory was removed
        raise map_os_error(exc, text, "cannot make the path absolute") from exc


class MemoryDB:
    """One memory.db: `.history`, `.facts`, and maintenance. Thread-safe."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        config: StoreConfig | None = None,
        *,
        _read_only: bool = False,
    ) -> None:
        """`_read_only` (internal, for the read-only CLI commands): the file must exist at
        the latest schema and is never written; every write raises `SqlmemError`."""
        if config is not None and not isinstance(config, StoreConfig):
            raise InvalidArgumentError("config must be a StoreConfig")
        self.path = resolve_path(path)
        self.config = config or StoreConfig()
        self._engine = Engine(
            self.path, self.config, hooks=(index_unsearchable_messages,), read_only=_read_only
        )
        self.history = SQLiteHistoryStore(self._engine)
        self.facts = SQLiteFactStore(self._engine)

    @property
    def engine(self) -> Engine:
        """The SQLite engine behind both stores (internal, not public API).

        The interface sqlmem's own modules use to run their statements on this database
        (the factory's bounding hooks, export and import, the CLI); programs should use
        `.history`, `.facts` and the maintenance methods.
        """
        return self._engine

    # -- life cycle ---------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._engine.closed

    def close(self) -> None:
        """Close every connection; idempotent. Later calls raise StoreClosedError."""
        self._engine.close()

    def __enter__(self) -> MemoryDB:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<MemoryDB {str(self.path)!r} {state}>"

    # -- maintenance --------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counts, sizes and schema version, for monitoring and `sqlmem info`."""
        with self._engine.read() as conn:
            sessions, active, archived, facts = conn.execute(_STATS).fetchall()[0]
            version = read_user_version(conn)
            page_size = conn.pragma("page_size")
            page_count = conn.pragma("page_count")
            free_pages = conn.pragma("freelist_count")
        return {
            "path": str(self.path),
            "schema_version": version,
            "sessions": sessions,
            "messages_active": active,
            "messages_archived": archived,
            "facts": facts,
            "page_size": page_size,
            "page_count": page_count,
            "free_pages": free_pages,
            "file_bytes": _size(self.path),
            "wal_bytes": _size(Path(f"{self.path}-wal")),
        }

    def check(self) -> CheckReport:
        """SQLite's integrity_check plus FTS5's integrity-check of every FTS table.

        Takes no write lock, so writers (threads, other processes) go on meanwhile; see
        `_fts_problems` for how, and what it costs.
        """
        problems: list[str] = []
        try:
            rows = self._integrity_check()
        except CorruptDatabaseError as exc:  # damaged beyond what the pragma can list
            return CheckReport(str(self.path), False, [str(exc.__cause__ or exc)])
        if rows != ["ok"]:
            problems.extend(str(r) for r in rows)
        problems.extend(self._fts_problems())
        return CheckReport(str(self.path), not problems, problems)

    def _fts_problems(self) -> list[str]:
        """FTS5's 'integrity-check' with rank 1, run on a private copy of the database.

        Why a copy: the check is an INSERT into the FTS table, and SQLite takes the
        file's write lock for any INSERT (inside a read transaction too; a read-only or
        query_only connection refuses it), and holds it for the whole check: 2 s at 500k
        messages, so a writer with a shorter busy timeout failed. `PRAGMA integrity_check`
        (FTS5-aware since SQLite 3.44) does not replace it: for external-content tables
        it checks the index alone, not against the content, and misses an index out of
        step with its rows. The copy is SQLite's backup into a private temporary file
        (SQLite's temp folder, deleted on close): a WAL reader's snapshot, no lock that
        a writer waits for. Costs temporary space the size of the file and a copy
        (measured: 0.12 s for 70 MB, the 0.6 s FTS check itself unchanged).
        """
        copy = self._copy_into("", str(self.path))
        problems: list[str] = []
        try:
            with translate_errors(str(self.path)):
                copy.pragma("trusted_schema", "OFF")  # its views are the file's, not ours
            for table in _FTS_TABLES:
                try:
                    with translate_errors(f"{self.path}: {table}"):
                        # rank 1: also compare the index with the content it was built from.
                        copy.execute(
                            f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)"
                        )
                except SqlmemError as exc:
                    problems.append(f"{table}: {exc.__cause__ or exc}")
        finally:
            copy.close()
        return problems

    def _integrity_check(self) -> list[str]:
        """PRAGMA integrity_check on a connection of its own, opened for it.

        Since SQLite 3.44 the pragma also checks FTS5 tables, with the FTS5 structure the
        connection cached earlier and without refreshing it: on a pooled reader, after the
        writer merged segments, a healthy file was reported as 'fts5: corruption found
        reading blob' (tests/reliability/test_bad_files.py pins it). A new connection has
        nothing cached; it is a WAL reader, so writers do not wait for the check.
        """
        with self._engine.read():  # StoreClosedError once closed; keeps the engine open
            conn = connect(self.path, self.config)
            try:
                with translate_errors(str(self.path)):
                    conn.pragma("query_only", "ON")
                    return [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
            finally:
                conn.close()

    def checkpoint(self) -> tuple[int, int]:
        """Copy the WAL into the database and truncate it; returns (wal frames, copied),
        equal on success.

        Waits up to the busy timeout for readers still using the WAL (a reader's snapshot
        must stay readable), for another process's writer and for another process's
        checkpoint; past it, raises `StorageBusyError` and leaves the WAL as it was
        (nothing is lost either way).
        """
        with self._engine.writer_connection() as conn:
            return self._truncate_wal(conn, "checkpoint")

    def vacuum(self) -> None:
        """Make deletions physical: afterwards no byte of deleted facts or purged sessions
        remains in the database file or its WAL.

        What `facts.delete`/`delete_many`/`history.purge` guarantee alone: the rows and
        their full-text index entries are gone at once (never returned by `get`/`get_all`,
        never found by `search`, and `check()` stays clean), but the bytes may remain in
        the file: in free pages and in the free space of pages, in old FTS5 segments (a
        delete only adds a tombstone to a newer segment), in SQLite's statistics samples
        (`sqlite_stat4` keeps copies of indexed values such as fact ids, tags, sources,
        session ids) and in WAL frames written before the delete.

        So this: merges every FTS5 index into one segment ('optimize': tombstones and the
        postings they cancel go), re-samples `sqlite_stat4` if statistics exist
        (`ANALYZE` reads live rows only), rebuilds the file (`VACUUM` rewrites every page
        and drops free ones), then checkpoints with TRUNCATE, which copies the rebuilt
        pages over the old ones and empties the WAL.

        A connection that holds a read snapshot older than the rebuild (another process
        inside a read transaction, the sqlite3 shell in BEGIN), or another process's
        checkpoint, keeps the last step waiting, up to the busy timeout; past it, raises
        `StorageBusyError`. The rebuild is committed by then: the old bytes may remain
        only until `checkpoint()` (no need to vacuum again) succeeds. Our own readers
        hold a snapshot for one statement only. Runs in time and space proportional to
        the whole file. A purge that a crash interrupted is finished first
        (`history.finish_purges`).
        """
        finish_purges(self._engine)
        with self._engine.writer_connection() as conn:
            for table in _FTS_TABLES:
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            if conn.execute(_HAS_STAT4).fetchall():
                conn.execute("ANALYZE")
            conn.execute("VACUUM")
            self._truncate_wal(conn, "vacuum")

    def _truncate_wal(self, conn: apsw.Connection, what: str) -> tuple[int, int]:
        """PASSIVE (to count the frames), then TRUNCATE, retried until the busy timeout.

        SQLite calls the busy handler while a checkpoint waits for readers or for the
        write lock, but not for the checkpoint lock itself: while another connection (a
        process's `checkpoint()`, its WAL hook) checkpoints, ours returns "busy" at once.
        So we retry with backoff; each try gets only what is left of the busy timeout, so
        the whole call never waits much longer than it.
        """
        timeout_ms = self.config.busy_timeout_ms
        deadline = time.monotonic() + timeout_ms / 1000
        delay = 0.001
        while True:
            left_ms = max(0, int((deadline - time.monotonic()) * 1000))
            conn.set_busy_timeout(left_ms)
            try:
                # TRUNCATE reports (0, 0) once it emptied the WAL: count the frames first.
                passive: Any = conn.execute(_CHECKPOINT_PASSIVE).fetchall()[0]
                busy = bool(passive[0]) or bool(conn.execute(_CHECKPOINT_TRUNCATE).fetchall()[0][0])
            except apsw.BusyError:
                busy = True
            finally:
                conn.set_busy_timeout(timeout_ms)
            if not busy:
                frames = max(0, int(passive[1]))  # -1 when the file is not in WAL mode
                return frames, frames  # TRUNCATE succeeded: every frame was copied
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.05)
        done = (
            "the rebuild is committed; call checkpoint() to finish"
            if what == "vacuum"
            else ("call it again once it has finished")
        )
        raise StorageBusyError(
            f"{self.path}: {what} could not finish within the busy timeout: another "
            "connection (a reader holding an old snapshot, a writer, or another process's "
            f"checkpoint) kept using the WAL; {done}"
        )

    def backup(self, dest_path: str | os.PathLike[str]) -> Path:
        """A consistent copy of the database taken while it stays in use.

        Never replaces anything: `dest_path` must not exist (nor its `-wal` or `-journal`,
        which SQLite would apply to the copy), else InvalidArgumentError. The copy is
        written under a temporary name in the destination folder and appears under
        `dest_path` only once complete, so a failed backup leaves nothing behind (folders
        it created included).
        """
        dest = resolve_path(dest_path)
        _refuse_existing_dest(dest, self.path)
        created = ensure_folder(dest.parent)
        temp = dest.parent / f".sqlmem-backup-{secrets.token_hex(8)}.tmp"
        try:
            try:
                os.close(os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL, FILE_MODE))
            except OSError as exc:
                raise map_os_error(exc, dest, "cannot create the backup") from exc
            target = self._copy_into(str(temp), str(dest))
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

    def _copy_into(self, target_path: str, context: str) -> apsw.Connection:
        """SQLite's backup of the database into `target_path` ('' opens a private temporary
        file, deleted on close); returns the target connection, open."""
        with self._engine.read() as source, translate_errors(context):
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
        if candidate == dest and _same_file(dest, database):
            raise InvalidArgumentError(
                f"backup: dest_path {str(dest)!r} is the database itself (a link or another "
                "spelling of its path)"
            )
        raise InvalidArgumentError(
            f"backup: {str(candidate)!r} already exists; backup never replaces a file "
            "(remove it first, or choose another dest_path)"
        )


def _same_file(a: Path, b: Path) -> bool:
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


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def open(path: str | os.PathLike[str], config: StoreConfig | None = None) -> MemoryDB:
    """Open (creating and migrating if needed) the memory database at `path`."""
    return MemoryDB(path, config)
