"""The single write connection of a database in this process, and the readers beside it.

Every mutation runs inside `Writer.transaction()`: the in-process lock is taken first (so
threads queue in Python, not in SQLite's busy handler), then `BEGIN IMMEDIATE` takes the
file's write lock at once, so another process makes us wait at BEGIN under the busy
timeout, never fail later on a read-to-write upgrade. Any exception rolls back; nothing
commits in a `finally`. Nested use (a store method calling another, or any store call
inside `MemoryDB.atomic()`) becomes a savepoint, and the thread that holds the transaction
reads on the write connection (`Writer.held_by_me`), so it sees its own writes.

Readers are pooled connections: a thread borrows one for a single statement and returns it,
so concurrent threads each read on their own connection and never wait for the writer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType

import apsw

from ...errors import SqlmemError, StorageBusyError, StoreClosedError
from ..apsw_errors import map_apsw_error

__all__ = ["ReaderPool", "Transaction", "Writer"]


class Writer:
    """Owns the write connection; serialises writers of this process."""

    def __init__(self, conn: apsw.Connection, path: Path, busy_timeout_ms: int) -> None:
        self._conn: apsw.Connection | None = conn
        self._path = path
        self._lock = threading.RLock()
        self._timeout_ms = busy_timeout_ms
        self._timeout = busy_timeout_ms / 1000
        self._depth = 0
        #: The thread inside the transaction (meaningful while `_depth` > 0).
        self._owner = 0
        #: Work for after the outermost commit (`after_commit`), dropped on rollback.
        self._after_commit: list[Callable[[], None]] = []

    def held_by_me(self) -> bool:
        """Whether this thread is inside a write transaction of this writer: its reads must
        then use the write connection, or they would not see its uncommitted writes."""
        return self._depth > 0 and self._owner == threading.get_ident()

    @property
    def raw_connection(self) -> apsw.Connection | None:
        """The connection without the lock, for a forked child only (see engine.py)."""
        return self._conn

    @property
    def connection(self) -> apsw.Connection:
        conn = self._conn
        if conn is None:
            raise StoreClosedError(f"{self._path}: store is closed")
        return conn

    def after_commit(self, work: Callable[[], None]) -> None:
        """Run `work` once the transaction this thread holds has committed and the write
        lock is released (never if it rolls back). For what must not run under the lock,
        such as an embedding model called for facts written inside `MemoryDB.atomic()`."""
        if not self.held_by_me():
            raise SqlmemError(f"{self._path}: after_commit outside a write transaction")
        self._after_commit.append(work)

    def transaction(self) -> Transaction:
        """`BEGIN IMMEDIATE` ... `COMMIT`, or a savepoint when already inside one."""
        return Transaction(self)

    def _acquire(self) -> float:
        """Take the in-process lock; returns how long that took (0.0 when it was free)."""
        if self._lock.acquire(blocking=False):
            return 0.0
        started = time.monotonic()
        if self._lock.acquire(timeout=self._timeout):
            return time.monotonic() - started
        raise StorageBusyError(
            f"{self._path}: database is busy (another thread held the writer for longer "
            f"than the busy timeout of {self._timeout_ms} ms)"
        )

    def _begin_with_time_left(self, conn: apsw.Connection, waited: float) -> None:
        """BEGIN IMMEDIATE after queueing behind our own threads: the file lock gets only
        what is left of the busy timeout, so a write never waits more than it in all."""
        left_ms = max(0, int((self._timeout - waited) * 1000))
        conn.set_busy_timeout(left_ms)
        try:
            conn.execute("BEGIN IMMEDIATE")
        finally:
            conn.set_busy_timeout(self._timeout_ms)

    @contextmanager
    def exclusive(self) -> Iterator[apsw.Connection]:
        """The connection with the writer lock held but no transaction (VACUUM, checkpoints)."""
        self._acquire()
        try:
            if self._depth:
                raise SqlmemError(
                    f"{self._path}: maintenance (vacuum, checkpoint, backup) cannot run "
                    "inside a write transaction (MemoryDB.atomic)"
                )
            try:
                yield self.connection
            except apsw.Error as exc:
                raise map_apsw_error(exc, str(self._path)) from exc
        finally:
            self._lock.release()

    @staticmethod
    def _rollback(conn: apsw.Connection) -> None:
        # SQLite may already have rolled back (e.g. after an I/O error or a full disk).
        if conn.in_transaction:
            with suppress(apsw.Error):
                conn.execute("ROLLBACK")

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


class Transaction:
    """One use of `Writer.transaction()`.

    A class rather than a generator context manager: every write goes through it, and
    the generator machinery cost several microseconds per call (W1 appends ~25 µs in
    all). Outermost: BEGIN IMMEDIATE, COMMIT on success, ROLLBACK on any exception
    (including a failed COMMIT). Nested: a savepoint, rolled back to on error.
    """

    __slots__ = ("_conn", "_savepoint", "_writer", "committed_work")

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        #: What `Writer.after_commit` queued, handed over when the outermost block
        #: committed; the caller runs it after leaving (see `calls.Writing`).
        self.committed_work: Sequence[Callable[[], None]] = ()

    def __enter__(self) -> apsw.Connection:
        writer = self._writer
        waited = writer._acquire()
        try:
            conn = writer.connection
            depth = writer._depth
            self._savepoint = f"sqlmem_{depth}" if depth else None
            try:
                if depth:
                    conn.execute(f"SAVEPOINT {self._savepoint}")
                else:
                    if waited:
                        writer._begin_with_time_left(conn, waited)
                    else:
                        conn.execute("BEGIN IMMEDIATE")
                    writer._owner = threading.get_ident()
            except apsw.Error as exc:
                raise map_apsw_error(exc, str(writer._path)) from exc
            writer._depth = depth + 1
        except BaseException:
            writer._lock.release()
            raise
        self._conn = conn
        return conn

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        writer, conn, name = self._writer, self._conn, self._savepoint
        try:
            if exc is None:
                try:
                    conn.execute("COMMIT" if name is None else f"RELEASE {name}")
                    if name is None and writer._after_commit:
                        self.committed_work = writer._after_commit
                    return
                except BaseException as failed:  # a failed COMMIT rolls back too
                    self._undo(conn, name)
                    if isinstance(failed, apsw.Error):
                        raise map_apsw_error(failed, str(writer._path)) from failed
                    raise
            self._undo(conn, name)
            if isinstance(exc, apsw.Error):
                raise map_apsw_error(exc, str(writer._path)) from exc
        finally:
            writer._depth -= 1
            if not writer._depth and writer._after_commit:
                writer._after_commit = []  # handed over above, or rolled back with the rest
            writer._lock.release()

    @staticmethod
    def _undo(conn: apsw.Connection, savepoint: str | None) -> None:
        if savepoint is None:
            Writer._rollback(conn)
        elif conn.in_transaction:
            conn.execute(f"ROLLBACK TO {savepoint}")
            conn.execute(f"RELEASE {savepoint}")


class ReaderPool:
    """Read connections handed out one per concurrent thread and returned after use."""

    def __init__(self, factory: Callable[[], apsw.Connection], path: Path) -> None:
        self._factory = factory
        self._path = path
        self._idle: list[apsw.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def acquire(self) -> apsw.Connection:
        """An idle connection (or a new one); give it back with `release`."""
        with self._lock:
            if self._closed:
                raise StoreClosedError(f"{self._path}: store is closed")
            idle = self._idle
            conn = idle.pop() if idle else None
        return self._factory() if conn is None else conn

    def release(self, conn: apsw.Connection) -> None:
        if conn.in_transaction:  # a reader left a snapshot open: end it
            with suppress(apsw.Error):
                conn.execute("ROLLBACK")
        with self._lock:
            if self._closed:
                conn.close()
            else:
                self._idle.append(conn)

    def idle_connections(self) -> list[apsw.Connection]:
        """Without the lock, for a forked child only (see engine.py)."""
        return list(self._idle)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
