"""`sqlmem.open()` and `MemoryDB`: one agent's memory file, its two stores, maintenance."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import apsw

from .config import StoreConfig
from .connection import ensure_file
from .engine import Engine
from .errors import InvalidArgumentError, SqlmemError, translate_errors
from .facts import SQLiteFactStore
from .history import SQLiteHistoryStore, index_unsearchable_messages
from .migrations import read_user_version

__all__ = ["CheckReport", "MemoryDB", "open", "resolve_path"]

_FTS_TABLES = ("messages_fts", "facts_fts")

_STATS = """
SELECT
    (SELECT count(*) FROM sessions),
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
    text = os.fspath(path)
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
        with self._engine.read() as conn:
            rows = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        if rows != ["ok"]:
            problems.extend(str(r) for r in rows)
        for table in _FTS_TABLES:
            try:
                with self._engine.write() as conn:
                    # rank 1: also compare the index with the content it was built from.
                    conn.execute(
                        f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)"
                    )
            except SqlmemError as exc:
                problems.append(f"{table}: {exc.__cause__ or exc}")
        return CheckReport(str(self.path), not problems, problems)

    def checkpoint(self) -> tuple[int, int]:
        """Copy the WAL into the database and truncate it; returns (wal frames, copied)."""
        with self._engine.writer_connection() as conn:
            row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()[0]
        return int(row[1]), int(row[2])  # type: ignore[arg-type]

    def vacuum(self) -> None:
        """Make deletions physical: merge FTS segments, rebuild the file, truncate the WAL.

        Afterwards no byte of deleted facts or purged sessions remains in the database or
        WAL file (free pages are gone because VACUUM rewrites every page).
        """
        with self._engine.writer_connection() as conn:
            for table in _FTS_TABLES:
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def backup(self, dest_path: str | os.PathLike[str]) -> Path:
        """A consistent copy of the database taken while it stays in use."""
        dest = resolve_path(dest_path)
        if dest == self.path:
            raise InvalidArgumentError("backup: dest_path must differ from the database path")
        ensure_file(dest)
        with self._engine.read() as source, translate_errors(str(dest)):
            target = apsw.Connection(str(dest))
            try:
                with target.backup("main", source, "main") as job:
                    job.step(-1)
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
