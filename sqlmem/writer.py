"""The single write connection of a database in this process, and the readers beside it.

Every mutation runs inside `Writer.transaction()`: the in-process lock is taken first (so
threads queue in Python, not in SQLite's busy handler), then `BEGIN IMMEDIATE` takes the
file's write lock at once, so another process makes us wait at BEGIN under the busy
timeout, never fail later on a read-to-write upgrade. Any exception rolls back; nothing
commits in a `finally`. Nested use (a store method calling another) becomes a savepoint.

Readers are pooled connections: a thread borrows one for a single statement and returns it,
so concurrent threads each read on their own connection and never wait for the writer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import apsw

from .errors import StorageBusyError, StoreClosedError, map_apsw_error

__all__ = ["ReaderPool", "Writer"]


class Writer:
    """Owns the write connection; serialises writers of this process."""

    def __init__(self, conn: apsw.Connection, path: Path, busy_timeout_ms: int) -> None:
        self._conn: apsw.Connection | None = conn
        self._path = path
        self._lock = threading.RLock()
        self._timeout = busy_timeout_ms / 1000
        self._depth = 0

    @property
    def connection(self) -> apsw.Connection:
        conn = self._conn
        if conn is None:
            raise StoreClosedError(f"{self._path}: store is closed")
        return conn

    @contextmanager
    def transaction(self) -> Iterator[apsw.Connection]:
        """`BEGIN IMMEDIATE` ... `COMMIT`, or a savepoint when already inside one."""
        if not self._lock.acquire(timeout=self._timeout):
            raise StorageBusyError(
                f"{self._path}: database is busy (another thread held the writer for longer "
                f"than the busy timeout of {self._timeout * 1000:.0f} ms)"
            )
        try:
            conn = self.connection
            if self._depth:
                yield from self._savepoint(conn)
            else:
                yield from self._outermost(conn)
        finally:
            self._lock.release()

    def _outermost(self, conn: apsw.Connection) -> Iterator[apsw.Connection]:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except apsw.Error as exc:
            raise map_apsw_error(exc, str(self._path)) from exc
        self._depth = 1
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            self._rollback(conn)
            if isinstance(exc, apsw.Error):
                raise map_apsw_error(exc, str(self._path)) from exc
            raise
        finally:
            self._depth = 0

    def _savepoint(self, conn: apsw.Connection) -> Iterator[apsw.Connection]:
        name = f"sqlmem_{self._depth}"
        conn.execute(f"SAVEPOINT {name}")
        self._depth += 1
        try:
            yield conn
            conn.execute(f"RELEASE {name}")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
            if isinstance(exc, apsw.Error):
                raise map_apsw_error(exc, str(self._path)) from exc
            raise
        finally:
            self._depth -= 1

    @contextmanager
    def exclusive(self) -> Iterator[apsw.Connection]:
        """The connection with the writer lock held but no transaction (VACUUM, checkpoints)."""
        if not self._lock.acquire(timeout=self._timeout):
            raise StorageBusyError(f"{self._path}: database is busy (writer held too long)")
        try:
            if self._depth:
                raise RuntimeError("maintenance cannot run inside a write transaction")
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


class ReaderPool:
    """Read connections handed out one per concurrent thread and returned after use."""

    def __init__(self, factory: Callable[[], apsw.Connection], path: Path) -> None:
        self._factory = factory
        self._path = path
        self._idle: list[apsw.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[apsw.Connection]:
        with self._lock:
            if self._closed:
                raise StoreClosedError(f"{self._path}: store is closed")
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._factory()
        try:
            yield conn
        except apsw.Error as exc:
            raise map_apsw_error(exc, str(self._path)) from exc
        finally:
            if conn.in_transaction:  # a reader left a snapshot open: end it
                with suppress(apsw.Error):
                    conn.execute("ROLLBACK")
            with self._lock:
                if self._closed:
                    conn.close()
                else:
                    self._idle.append(conn)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
