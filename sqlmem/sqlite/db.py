"""`sqlmem.open()` and `MemoryDB`: one agent's memory file, its two stores, maintenance."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from ..config import StoreConfig
from ..errors import InvalidArgumentError
from ..protocols import Embedder
from ..rules.embedder import check_embedder
from ..rules.encoding import now_ms
from ..rules.forget import ForgetReport
from ..rules.paths import absolute_path
from .core import backup, maintenance
from .core.engine import Engine
from .core.maintenance import CheckReport
from .core.migrations import read_user_version
from .frameworks.checkpoints import SQLiteCheckpointStore
from .frameworks.kv import SQLiteKeyValueStore
from .frameworks.kv_search import SQLiteKVSearch
from .stores import facts_sql, history_sql
from .stores.docs import SQLiteDocumentStore
from .stores.facts import SQLiteFactStore
from .stores.history import SQLiteHistoryStore, index_unsearchable_messages
from .stores.items import fill_fingerprints
from .stores.message_vectors_sql import count_without_vectors as count_messages_without_vectors
from .stores.run_leases import SQLiteRunLeases
from .stores.vectors_sql import count_without_vectors

__all__ = ["CheckReport", "MemoryDB", "check_path", "open", "resolve_path"]

_STATS = f"""
SELECT
    (SELECT count(*) FROM sessions WHERE typeof(session_id) = 'text'  -- not detached
        AND {history_sql.LISTED}),
    (SELECT coalesce(sum(last_seq - archived_seq - holes), 0) FROM sessions),
    (SELECT count(*) FROM messages)
        - (SELECT coalesce(sum(last_seq - archived_seq - holes), 0) FROM sessions),
    (SELECT count(*) FROM facts) - (SELECT count(*) FROM ({facts_sql.HIDDEN})),  -- live
    (SELECT count(*) FROM documents),
    (SELECT count(*) FROM kv WHERE expires_at IS NULL OR expires_at > :now),
    (SELECT count(*) FROM lg_checkpoints),
    (SELECT count(*) FROM lg_writes)
"""


def resolve_path(path: str | os.PathLike[str]) -> Path:
    """`path` as an absolute Path, or InvalidArgumentError if it can never be a database."""
    return absolute_path(check_path(path), "path")


def check_path(path: str | os.PathLike[str]) -> str:
    """`path` as text, or InvalidArgumentError if it can never be a database; without
    touching the disk or the current directory (adapters check a path in constructors
    that may run on an event loop, and open it later)."""
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
    return text


class MemoryDB:
    """One memory.db: `.history`, `.facts`, and maintenance. Thread-safe."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        config: StoreConfig | None = None,
        *,
        embedder: Embedder | None = None,
        _read_only: bool = False,
    ) -> None:
        """`embedder`: facts and messages get vectors, and their searches
        modes "vector" and "hybrid".

        `_read_only` (internal, for the read-only CLI commands): the file must exist at
        the latest schema and is never written; every write raises `SqlmemError`."""
        check_embedder(embedder)  # before the file is touched
        if config is not None and not isinstance(config, StoreConfig):
            raise InvalidArgumentError("config must be a StoreConfig")
        self.path = resolve_path(path)
        self.config = config or StoreConfig()
        self._engine = Engine(
            self.path,
            self.config,
            hooks=(index_unsearchable_messages, fill_fingerprints),
            read_only=_read_only,
        )
        self.history = SQLiteHistoryStore(self._engine, embedder)
        self.facts = SQLiteFactStore(self._engine, embedder)
        #: The workspace documents: MEMORY.md, PROFILE.md, daily notes ...
        self.docs = SQLiteDocumentStore(self._engine)
        #: One-run-at-a-time and cooldown state shared by every process on the file (the
        #: workspace extractor's gate).
        self.run_leases = SQLiteRunLeases(self._engine)
        #: The frameworks' records in the file (`sqlmem.adapters.ports`): key-value items,
        #: their vectors, LangGraph checkpoints.
        self.kv = SQLiteKeyValueStore(self._engine)
        self.kv_search = SQLiteKVSearch(self._engine)
        self.checkpoints = SQLiteCheckpointStore(self._engine)

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

    # -- atomic work across stores --------------------------------------------------------

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Every write this thread makes through this database's stores inside the block
        commits together when it ends, or not at all when it raises (the exception
        propagates).

        Why: a consolidation writes a HISTORY.md entry, rewrites MEMORY.md and archives
        the messages it summarised; a crash between those writes would lose or repeat
        memory. One SQLite transaction holds them: `BEGIN IMMEDIATE` at the start, so the
        block owns the file's write lock from its first line (other threads and
        processes wait for it under the busy timeout, then get `StorageBusyError`, never a
        half-applied block). Store calls inside become savepoints, nested blocks too
        (an inner block that raises is undone alone, if the outer one catches the
        error). Reads inside see the block's own writes: this thread reads on the write
        connection while it holds the transaction.

        Keep the block short and free of model or network calls: it holds the write lock
        throughout. Maintenance (`vacuum`, `checkpoint`, `backup`) refuses to run inside.
        """
        with self._engine.write():
            yield

    # -- maintenance --------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counts, sizes and schema version, for monitoring and `sqlmem info`."""
        with self._engine.read() as conn:
            counts = conn.execute(_STATS, {"now": now_ms()}).fetchall()[0]
            sessions, active, archived, facts, documents, kv, checkpoints, writes = counts
            embedder = self.facts.embedder
            model = embedder.model if embedder else None
            # Rows waiting for `embed_pending`: none without an embedder (a BM25-only
            # store is not missing anything; counting every row alarmed monitoring).
            without_vectors = count_without_vectors(conn, model) if model else 0
            messages_without_vectors = count_messages_without_vectors(conn, model) if model else 0
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
            "facts_without_vectors": without_vectors,
            "messages_without_vectors": messages_without_vectors,
            "documents": documents,
            "kv_entries": kv,  # live rows of the frameworks' key-value stores
            "checkpoints": checkpoints,  # LangGraph's, with their pending writes
            "checkpoint_writes": writes,
            "page_size": page_size,
            "page_count": page_count,
            "free_pages": free_pages,
            "file_bytes": _size(self.path),
            "wal_bytes": _size(Path(f"{self.path}-wal")),
        }

    def check(self) -> CheckReport:
        """SQLite's integrity_check plus FTS5's integrity-check of every FTS table.

        Takes no write lock, so writers (threads, other processes) go on meanwhile: the
        FTS check runs on a private copy (see `maintenance._fts_problems` for its cost).
        """
        return maintenance.check(self._engine)

    def checkpoint(self) -> tuple[int, int]:
        """Copy the WAL into the database and truncate it; returns (wal frames, copied),
        equal on success.

        Waits up to the busy timeout for readers still using the WAL (a reader's snapshot
        must stay readable), for another process's writer and for another process's
        checkpoint; past it, raises `StorageBusyError` and leaves the WAL as it was
        (nothing is lost either way).
        """
        return maintenance.checkpoint(self._engine)

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

        Expired facts are deleted first (`facts.expire()`), so their bytes go too.

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
        hold a snapshot for one statement (a `backup()` or `check()` in another thread
        for its whole copy). Runs in time and space proportional to
        the whole file. A purge that a crash interrupted is finished first
        (`purge.finish_purges`).
        """
        maintenance.vacuum(self._engine)

    def forget(self, source: str) -> ForgetReport:
        """Remove `source` (a session id, `"msg:{session}#{seq}"`, `"doc:{path}"` or a
        path ending in `.md`) and every fact derived only from it, in one transaction;
        returns the counts. After `vacuum()` no byte of any of it remains in the file
        (`sqlmem.sqlite.stores.forget`)."""
        from .stores.forget import forget

        return forget(self._engine, source)

    def maintain(self) -> dict[str, Any]:
        """Periodic care without a rebuild: expire facts, finish interrupted purges, merge
        the search indexes, checkpoint (`sqlmem maintain`). Returns what it did."""
        return maintenance.maintain(self._engine)

    def backup(self, dest_path: str | os.PathLike[str]) -> Path:
        """A consistent copy of the database taken while it stays in use.

        Never replaces anything: `dest_path` must not exist (nor its `-wal` or `-journal`,
        which SQLite would apply to the copy), else InvalidArgumentError. The copy is
        written under a temporary name in the destination folder and appears under
        `dest_path` only once complete, so a failed backup leaves nothing behind (folders
        it created included).
        """
        return backup.backup(self._engine, resolve_path(dest_path))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def open(
    path: str | os.PathLike[str],
    config: StoreConfig | None = None,
    *,
    embedder: Embedder | None = None,
) -> MemoryDB:
    """Open (creating and migrating if needed) the memory database at `path`; with an
    `embedder`, facts and messages get vectors for semantic and hybrid search."""
    return MemoryDB(path, config, embedder=embedder)
