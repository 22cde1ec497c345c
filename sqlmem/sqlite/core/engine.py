"""One open database file: its writer, its readers, and the open/suspend/close life cycle.

Opening order matters for the promises we make about files we do not own (`file_open`).

`suspend()` lets the factory close an idle database's connections to bound open file
descriptors; the next `read()`/`write()` reopens them, so handles stay valid (a file that
vanished meanwhile is an error, never silently recreated empty). `close()` is final: every
later call raises `StoreClosedError`; it never raises or waits for another process itself.

A read-only engine (`read_only=True`, for `sqlmem info`, `search`, `history`, `export`,
`check`) never writes the database file: a person looking at a live agent's memory must
not change its bytes. Its connections are `query_only`, so a write fails at once (a
sqlmem error, SQLite's "read-only") and no write lock is ever taken. It leaves the journal
mode as it is (a rollback-journal file stays one), runs no migration (the file must
already be at the latest schema), no open hook (messages stored with history search off
stay unindexed), no `PRAGMA optimize` at close, and no maintenance. When a WAL with frames
is already there (another process is using the file, or crashed), closing does not
checkpoint it into the file (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE). The file is not opened
SQLITE_OPEN_READONLY: such a connection cannot remove the -wal and -shm files it creates
to read a WAL-mode file, so `sqlmem info` would leave two new files beside a cleanly
closed one; a read-write connection that writes nothing removes them as any last
connection does, without touching the database file.

Pauses. Two things need every call of this process to stand still for a moment, and
both use one mechanism (`_pause`, checked where a call enters, under the lock it takes
anyway): `os.fork()` (sqlmem.forksafe) and the writer's last-resort checkpoint
(`readers_paused`, used by connection.WalCheckpointer). A fork waits for the calls in
flight to end and then closes this engine's connections, so the child inherits no
connection, no transaction and no SQLite lock or mutex state: its first call opens
connections of its own, and the parent's reopen on their next use.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

import apsw

from ...config import StoreConfig
from ...errors import SqlmemError, StoreClosedError
from ...forksafe import abandon, register
from ..apsw_errors import translate_errors
from .calls import Reading, Snapshot, Writing
from .connection import WalCheckpointer
from .file_open import close_quietly, open_reader, open_writer
from .migrations import read_fts_tokenizer
from .readonly import wal_has_frames
from .writer import ReaderPool, Writer

__all__ = ["Engine", "OpenHook"]

_log = logging.getLogger("sqlmem")

#: Bits of Engine._pause: which new calls wait before entering.
_PAUSE_ALL = 1  # a fork is under way (sqlmem.forksafe)
_PAUSE_READS = 2  # the writer waits for this process's readers to let go of the WAL

#: Work run with the writer after every (re)open, before anyone else can use it, e.g.
#: indexing messages stored while history search was off. A hook reads first and opens a
#: write transaction (`writer.transaction()`) only when it has work: opening a file must
#: not take the write lock for nothing (a person inspecting a live agent's memory).
OpenHook = Callable[[Writer, StoreConfig], None]


class Engine:
    def __init__(
        self,
        path: Path,
        config: StoreConfig,
        hooks: Sequence[OpenHook] = (),
        *,
        read_only: bool = False,
    ) -> None:
        self.path = path
        self.config = config
        #: Never writes the file (see the module docstring); hooks are not run.
        self.read_only = read_only
        #: Read-only and a WAL with frames was there at open: never checkpoint it on close.
        self._keep_wal = False
        #: The FTS tokenizer of the file (read at open; the config's only for new files).
        self.tokenizer = config.tokenizer
        self._hooks = tuple(hooks)
        #: Monotonic time of the last read or write, for least-recently-used eviction.
        self.last_used = time.monotonic()
        #: Called (outside any lock) after a suspended engine reopened on use, so an
        #: owner that bounds open databases can suspend another one.
        self.on_reopen: Callable[[Engine], None] | None = None
        #: Called (outside any lock, must not raise) when the last call in flight ends,
        #: so an owner that bounds open databases can suspend one that went idle.
        self.on_idle: Callable[[Engine], None] | None = None
        # A plain lock for the hot path (entering and leaving a call); the condition
        # around it only serves close(), which waits for calls in flight.
        self._lock = threading.Lock()
        self._state = threading.Condition(self._lock)
        #: Reads in flight (part of `_active`), and those of them that hold their snapshot
        #: for long (`long_read`), for `readers_paused`.
        self._reading = self._long_reads = 0
        #: The thread reopening the connections inside `_enter` (it holds `_lock`).
        self._opening_thread: int | None = None
        self._pause = 0
        self._closed = False
        self._writer: Writer | None = None
        self._readers: ReaderPool | None = None
        #: The writer's WAL hook; its PASSIVE checkpoints run in `_leave` (see there).
        self._checkpointer: WalCheckpointer | None = None
        self._checkpointing = threading.Lock()
        # The first open counts as a call in flight: a fork in another thread waits for it.
        self._active = 1
        register(self)
        try:
            self._open(create=not read_only)
        except BaseException:
            self._closed = True
            raise
        finally:
            self._leave()

    # -- life cycle -------------------------------------------------------------------

    def _open(self, *, create: bool = False) -> None:
        if not create and not self.path.exists():
            raise SqlmemError(
                f"{self.path}: the database file disappeared while the store was suspended"
            )
        read_only = self.read_only
        if read_only:  # before any connection: its first read may recover a WAL
            self._keep_wal = wal_has_frames(self.path)
        conn, checkpointer = open_writer(
            self.path,
            self.config,
            self.readers_paused,
            create=create,
            read_only=read_only,
            keep_wal=self._keep_wal,
        )
        try:
            with translate_errors(str(self.path)):
                self.tokenizer = read_fts_tokenizer(conn) or self.config.tokenizer
            writer = Writer(conn, self.path, self.config.busy_timeout_ms)
            with translate_errors(str(self.path)):
                for hook in () if read_only else self._hooks:
                    hook(writer, self.config)
        except BaseException:
            close_quietly(conn)
            raise
        self._writer = writer
        self._readers = ReaderPool(self._connect_reader, self.path)
        self._checkpointer = checkpointer

    def _connect_reader(self) -> apsw.Connection:
        return open_reader(
            self.path, self.config, read_only=self.read_only, keep_wal=self._keep_wal
        )

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def is_open(self) -> bool:
        """True while connections are held (not closed, not suspended)."""
        return self._writer is not None

    def suspend(self) -> bool:
        """Close the connections if nobody is using them; the next use reopens.

        Never waits: an engine busy in another thread is simply not idle.
        """
        if not self._state.acquire(blocking=False):
            return False
        try:
            if self._closed or self._active or self._writer is None:
                return False
            self._shutdown()
            return True
        finally:
            self._state.release()

    def close(self) -> None:
        with self._state:
            if self._closed:
                return
            self._closed = True
            while self._active:  # let calls in flight finish
                self._state.wait()
            self._shutdown()

    def _shutdown(self, *, optimize: bool = True) -> None:
        readers, writer = self._readers, self._writer
        self._readers = self._writer = None
        self._checkpointer = None
        if readers is not None:
            readers.close()
        if writer is not None:
            conn = writer.connection
            # Housekeeping only: never wait for another process, never fail a close.
            # Never for a read-only engine: optimize may run ANALYZE, a write.
            with suppress(apsw.Error):
                if optimize and not self.read_only:
                    conn.set_busy_timeout(0)
                    conn.pragma("optimize")
            with suppress(apsw.Error):
                writer.close()

    # -- pauses: forks and the last-resort checkpoint ------------------------------------

    def pause_for_fork(self, timeout: float) -> None:
        """Before `os.fork()` (sqlmem.forksafe): stop new calls, wait up to `timeout` for
        the calls in flight, then close the connections; they reopen on next use."""
        started = time.monotonic()
        # Bounded here too: a reopen holds the lock through connecting and migrating.
        if not self._lock.acquire(timeout=timeout):
            self._fork_unprepared()
            return
        try:
            if self._closed:
                return
            self._pause |= _PAUSE_ALL
            left = max(0.0, timeout - (time.monotonic() - started))
            if not self._state.wait_for(lambda: not self._active, left):
                self._fork_unprepared()
                return
            if self._writer is not None:
                self._shutdown(optimize=False)
        finally:
            self._lock.release()

    def _fork_unprepared(self) -> None:
        _log.warning(
            "%s: forking while a call is still in flight (in another thread, or in the one "
            "forking); the child will not use this process's connections to the file",
            self.path,
        )

    def resume_after_fork(self) -> None:
        """In the parent, after `os.fork()`: calls go on."""
        with self._lock:
            self._pause &= ~_PAUSE_ALL
            self._state.notify_all()

    def forget_after_fork(self) -> None:
        """In the child, after `os.fork()`: start afresh, never touching what the parent
        left open (see sqlmem.forksafe); the first call opens new connections."""
        # Not Writer.close()/ReaderPool.close(): not a single call into SQLite, and their
        # locks may be held by a parent thread that does not exist here. The apsw module
        # is kept too: when it is freed at interpreter shutdown it closes every connection
        # it still knows of, and a child hung there on a mutex of the parent's writer.
        abandon([*_connections(self._writer, self._readers), apsw])
        self._writer = self._readers = None
        self._checkpointer = None
        self._checkpointing = threading.Lock()
        self._lock = threading.Lock()
        self._state = threading.Condition(self._lock)
        self._active = self._reading = self._pause = 0

    @contextmanager
    def readers_paused(self, timeout: float) -> Iterator[bool]:
        """New reads of this process wait inside; yields whether the reads in flight all
        ended within `timeout`.

        For the writer's last-resort checkpoint (connection.WalCheckpointer): readers that
        overlap all the time, each holding its snapshot for a second or two, never leave
        the moment with no reader that restarting the WAL needs, and the WAL grew by
        gigabytes. Called on the writer's thread, which holds the write lock.

        That thread may hold this engine's lock too: a reopen runs the open hooks, whose
        commit calls the checkpointer, from inside `_enter`. Nothing is paused then (the
        lock would be waited for in vain), nor while a long read is in flight (a backup,
        the integrity check: `long_read`), which no pause would see end in time: it
        yields False.
        """
        if self._long_reads or self._opening_thread == threading.get_ident():
            yield False
            return
        self._lock.acquire()
        try:
            self._pause |= _PAUSE_READS
            drained = self._state.wait_for(lambda: not self._reading, timeout)
        except BaseException:
            self._pause &= ~_PAUSE_READS
            self._state.notify_all()
            raise
        finally:
            self._lock.release()
        try:
            yield drained
        finally:
            with self._lock:
                self._pause &= ~_PAUSE_READS
                self._state.notify_all()

    # -- use --------------------------------------------------------------------------

    def _enter(self, reading: bool = False) -> tuple[Writer, ReaderPool]:
        reopened = False
        with self._lock:
            while self._pause and (reading or self._pause & _PAUSE_ALL):
                self._state.wait()
            if self._closed:
                raise StoreClosedError(f"{self.path}: store is closed")
            if self._writer is None:
                self._opening_thread = threading.get_ident()  # see readers_paused
                try:
                    self._open()
                finally:
                    self._opening_thread = None
                reopened = True
            self._active += 1
            if reading:
                self._reading += 1
            self.last_used = time.monotonic()
            writer, readers = self._writer, self._readers
        assert writer is not None and readers is not None
        if reopened and self.on_reopen is not None:
            try:
                self.on_reopen(self)
            except Exception:  # eviction is housekeeping; never fail the caller's call
                _log.exception("%s: on_reopen hook failed", self.path)
        return writer, readers

    def _leave(self, reading: bool = False) -> None:
        checkpointer = self._checkpointer
        if not reading and checkpointer is not None and checkpointer.passive_due:
            self._passive_checkpoint(checkpointer)
        with self._lock:
            self._active -= 1
            if reading:
                self._reading -= 1
            if self._pause or self._closed:
                self._state.notify_all()  # a fork, a checkpoint or close() waits for us
            if self._active:
                return
        if self.on_idle is not None:
            self.on_idle(self)

    def _passive_checkpoint(self, checkpointer: WalCheckpointer) -> None:
        """The PASSIVE checkpoint the writer's last commit made due, run after its write
        lock was released, on a reader connection (a checkpoint needs no write lock, and
        query_only does not stop one): this process's other writers go on meanwhile, as
        they would beside a plain SQLite connection checkpointing after its commit. One
        at a time (a thread finding one under way leaves it); housekeeping, so it never
        fails the call that ran it (the next due one tries again). Still counted as a
        call in flight, so a fork or close() waits for it."""
        readers = self._readers
        if readers is None or not self._checkpointing.acquire(blocking=False):
            return
        try:
            checkpointer.passive_due = False
            conn = readers.acquire()
            try:
                conn.wal_checkpoint("main", apsw.SQLITE_CHECKPOINT_PASSIVE)
            finally:
                readers.release(conn)
        except (apsw.Error, SqlmemError):
            pass
        finally:
            self._checkpointing.release()

    def write(self) -> Writing:
        """One write transaction (a savepoint when nested)."""
        return Writing(self)

    def writer_held_by_me(self) -> Writer | None:
        """The writer when this thread is inside its write transaction (a store call in
        `MemoryDB.atomic()`: the file's write lock is held), else None."""
        writer = self._writer
        return writer if writer is not None and writer.held_by_me() else None

    def read(self) -> Reading:
        """A reader connection for this thread, returned to the pool afterwards."""
        return Reading(self)

    def snapshot(self) -> Snapshot:
        """`read()` for several statements that must see the file in one state."""
        return Snapshot(self)

    @contextmanager
    def long_read(self) -> Iterator[apsw.Connection]:
        """`read()` for work that holds its snapshot for long (a backup, the integrity
        check): the writer's last-resort checkpoint does not pause readers for it, since
        no pause would see it end in time (`readers_paused`)."""
        with self._lock:
            self._long_reads += 1
        try:
            with self.read() as conn:
                yield conn
        finally:
            with self._lock:
                self._long_reads -= 1

    def refuse_maintenance_if_read_only(self) -> None:
        if self.read_only:  # query_only does not stop a checkpoint
            raise SqlmemError(f"{self.path}: opened read-only; maintenance cannot run")

    @contextmanager
    def writer_connection(self) -> Iterator[apsw.Connection]:
        """The write connection outside a transaction, for maintenance (VACUUM, checkpoint)."""
        self.refuse_maintenance_if_read_only()
        writer, _ = self._enter()
        try:
            with writer.exclusive() as conn:
                yield conn
        finally:
            self._leave()


def _connections(writer: Writer | None, readers: ReaderPool | None) -> list[apsw.Connection]:
    found = list(readers.idle_connections()) if readers is not None else []
    if writer is not None and writer.raw_connection is not None:
        found.append(writer.raw_connection)
    return found
