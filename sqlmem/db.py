"""`sqlmem.open()` and `MemoryDB`: one agent's memory file, its two stores, maintenance."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import apsw

from .config import StoreConfig
from .connection import connect, ensure_file
from .engine import Engine
from .errors import (
    CorruptDatabaseError,
    InvalidArgumentError,
    SqlmemError,
    StorageBusyError,
    StoreClosedError,
    translate_errors,
)
from .facts import SQLiteFactStore
from .history import SQLiteHistoryStore, finish_purges, index_unsearchable_messages
from .migrations import read_user_version

__all__ = ["CheckReport", "MemoryDB", "open", "resolve_path"]

_FTS_TABLES = ("messages_fts", "facts_fts")

_CHECKPOINT_PASSIVE = "PRAGMA wal_checkpoint(PASSIVE)"

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
    return Path(text).expanduser().absolute()


class MemoryDB:
    """One memory.db: `.history`, `.facts`, and maintenance. Thread-safe."""

    def __init__(self, path: str | os.PathLike[str], config: StoreConfig | None = None) -> None:
        if config is not None and not isinstance(config, StoreConfig):
            raise InvalidArgumentError("config must be a StoreConfig")
        self.path = resolve_path(path)
        self.config = config or StoreConfig()
        self._engine = Engine(self.path, self.config, hooks=(index_unsearchable_messages,))
        self.history = SQLiteHistoryStore(self._engine)
        self.facts = SQLiteFactStore(self._engine)

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
        """SQLite's integrity_check plus FTS5's integrity-check of every FTS table."""
        problems: list[str] = []
        try:
            rows = self._integrity_check()
        except CorruptDatabaseError as exc:  # damaged beyond what the pragma can list
            return CheckReport(str(self.path), False, [str(exc.__cause__ or exc)])
        if rows != ["ok"]:
            problems.extend(str(r) for r in rows)
        for table in _FTS_TABLES:
            try:
                with self._engine.write() as conn:
                    # rank 1: also compare the index with the content it was built from.
                    conn.execute(
                        f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)"
                    )
            except (StorageBusyError, StoreClosedError):
                raise  # not a verdict on the file: say so instead of "damaged"
            except SqlmemError as exc:
                problems.append(f"{table}: {exc.__cause__ or exc}")
        return CheckReport(str(self.path), not problems, problems)

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
        must stay readable) and for another process's writer; past it, raises
        `StorageBusyError` and leaves the WAL as it was (nothing is lost either way).
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
        inside a read transaction, the sqlite3 shell in BEGIN) still needs the old pages,
        so the last step waits for it up to the busy timeout; past it, raises
        `StorageBusyError` and the old bytes may remain until `vacuum()` or `checkpoint()`
        is called again once that reader let go. Our own readers hold a snapshot for one
        statement only. Runs in time and space proportional to the whole file. A purge
        that a crash interrupted is finished first (`history.finish_purges`).
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
        # TRUNCATE reports (0, 0) once it emptied the WAL: count the frames first.
        row: Any = conn.execute(_CHECKPOINT_PASSIVE).fetchall()[0]
        frames = max(0, int(row[1]))  # -1 when the file is not in WAL mode
        row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()[0]
        busy = row[0]
        if busy:
            raise StorageBusyError(
                f"{self.path}: {what} could not finish: another connection (a reader holding "
                "an old snapshot, or a writer) kept using the WAL past the busy timeout; "
                "call it again once it has finished"
            )
        return frames, frames  # TRUNCATE succeeded: every frame was copied

    def backup(self, dest_path: str | os.PathLike[str]) -> Path:
        """A consistent copy of the database taken while it stays in use."""
        dest = resolve_path(dest_path)
        if dest.resolve() == self.path.resolve() or (
            dest.exists() and os.path.samefile(dest, self.path)
        ):
            raise InvalidArgumentError(
                f"backup: dest_path {str(dest)!r} is the database itself (a link or another "
                "spelling of its path)"
            )
        ensure_file(dest)
        with self._engine.read() as source, translate_errors(str(dest)):
            target = apsw.Connection(str(dest))
            try:
                # Not `with job:`: when the file system fails, apsw's Backup.__exit__ can
                # raise SystemError ("returned a result with an exception set") instead of
                # the apsw error (tests/reliability/test_io_faults.py). step, then finish.
                job = target.backup("main", source, "main")
                try:
                    job.step(-1)
                finally:
                    job.finish()
            finally:
                target.close()
        return dest


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def open(path: str | os.PathLike[str], config: StoreConfig | None = None) -> MemoryDB:
    """Open (creating and migrating if needed) the memory database at `path`."""
    return MemoryDB(path, config)
