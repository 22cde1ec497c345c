"""The two ways into an engine: `Engine.write()` and `Engine.read()` return these.

Every store call goes through one of them: they are the hot path (an append, a
`get_recent`, a search), so they stay as they were measured (see below), and use the
engine's `_enter`/`_leave` directly.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

import apsw

from ..apsw_errors import map_apsw_error

if TYPE_CHECKING:
    from .writer import ReaderPool, Writer

__all__ = ["Gate", "Reading", "Snapshot", "Writing"]


class Gate(Protocol):
    """What a call needs of its engine (`Engine` is one): the way in, which waits out a
    pause and hands over the writer and the reader pool, the way out, and the file's path
    for error messages. Declared here so this module does not import the engine that
    imports it."""

    path: Path

    def _enter(self, reading: bool = False) -> tuple[Writer, ReaderPool]: ...

    def _leave(self, reading: bool = False) -> None: ...


# Every store call goes through one of these two. They are classes rather than
# generator context managers, and fold the engine's bookkeeping, the reader pool and
# the writer's transaction into one object: the layers of generators cost more than
# the SQL of a small read (measured on get_recent and single appends).


class Writing:
    __slots__ = ("_engine", "_tx")

    def __init__(self, engine: Gate) -> None:
        self._engine = engine

    def __enter__(self) -> apsw.Connection:
        writer, _ = self._engine._enter()
        try:
            tx = self._tx = writer.transaction()
            return tx.__enter__()
        except BaseException:
            self._engine._leave()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._tx.__exit__(exc_type, exc, tb)
        finally:
            self._engine._leave()
        for work in self._tx.committed_work:  # committed, lock released (after_commit)
            work()


class Reading:
    __slots__ = ("_conn", "_engine", "_readers")
    _readers: ReaderPool | None  # None: reading on the write connection (see Writer.held_by_me)

    def __init__(self, engine: Gate) -> None:
        self._engine = engine

    def __enter__(self) -> apsw.Connection:
        writer, readers = self._engine._enter(True)
        try:
            if writer._depth and writer.held_by_me():  # inside our own write transaction
                self._readers = None
                conn = self._conn = writer.connection
                return conn
            conn = self._conn = readers.acquire()
        except BaseException:
            self._engine._leave(True)
            raise
        self._readers = readers
        return conn

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self._readers is not None:
                self._readers.release(self._conn)
        finally:
            self._engine._leave(True)
        if isinstance(exc, apsw.Error):
            raise map_apsw_error(exc, str(self._engine.path)) from exc


class Snapshot(Reading):
    """`Reading` whose statements all see one snapshot of the file: a deferred BEGIN (the
    snapshot starts at the first statement), ended when the pool takes the connection
    back (`ReaderPool.release` rolls back a reader left in a transaction). Without it
    each statement is a read transaction of its own: a search's probe for hidden facts
    and the search itself could see two states of the file, and the two implicit
    transactions cost more than this one (~1.5 µs for a search's two statements).
    Inside our own write transaction the writer's connection is used as it is."""

    __slots__ = ()

    def __enter__(self) -> apsw.Connection:
        conn = super().__enter__()
        if self._readers is not None:
            try:
                conn.execute("BEGIN")
            except BaseException as exc:
                self.__exit__(type(exc), exc, exc.__traceback__)
                raise
        return conn
