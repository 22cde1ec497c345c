"""The one place where psycopg's errors become sqlmem's (no psycopg exception leaves sqlmem).

Every call that reaches PostgreSQL runs inside `translate()`: no psycopg or psycopg-pool
exception leaves the package, and the original is kept as `__cause__`. Waiting too long
(a lock past `lock_timeout`, a statement past `statement_timeout`, no pooled connection
within the busy timeout, a deadlock or serialization failure) and a server that is down,
restarting or dropped the connection are all `StorageBusyError`: the same call can succeed
later, with nothing half written (each write is one transaction). One case differs: the
connection lost while a write was committing (`commit_unknown`, a `CommitUnknownError`):
the write may be stored, so repeating it blindly could store it twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import psycopg_pool
from psycopg import errors as pg

from ..errors import (
    CommitUnknownError,
    InvalidArgumentError,
    SqlmemError,
    StorageBusyError,
    StoreClosedError,
)

__all__ = ["commit_unknown", "map_error", "translate"]

# SQLSTATE classes: 54 program limit exceeded (a tsvector over 1 MB), 22 data exception.
_TOO_BIG = ("54",)
_BAD_DATA = ("22",)


def map_error(exc: BaseException, context: str) -> SqlmemError:
    """The sqlmem error for one psycopg/psycopg-pool exception, `exc` as its cause."""
    where = f"{context}: " if context else ""
    mapped: SqlmemError
    if isinstance(exc, psycopg_pool.PoolClosed):
        mapped = StoreClosedError(f"{where}store is closed")
    elif isinstance(exc, psycopg_pool.PoolTimeout):
        mapped = StorageBusyError(f"{where}no database connection within the busy timeout ({exc})")
    elif isinstance(exc, (pg.LockNotAvailable, pg.QueryCanceled)):
        mapped = StorageBusyError(f"{where}database is busy (lock or statement timeout: {exc})")
    elif isinstance(exc, pg.ReadOnlySqlTransaction):  # a standby, or a demoted primary
        mapped = StorageBusyError(
            f"{where}database server is read-only (a standby, or a primary being switched "
            f"over: {exc}); nothing was written, the store reconnects to the primary"
        )
    elif isinstance(exc, (pg.DeadlockDetected, pg.SerializationFailure)):
        mapped = StorageBusyError(f"{where}database is busy (concurrent writers: {exc})")
    elif isinstance(exc, psycopg.Error) and (exc.sqlstate or "")[:2] in _TOO_BIG:
        mapped = InvalidArgumentError(f"{where}value too large for PostgreSQL ({exc})")
    elif isinstance(exc, psycopg.Error) and (exc.sqlstate or "")[:2] in _BAD_DATA:
        mapped = InvalidArgumentError(f"{where}value refused by PostgreSQL ({exc})")
    elif isinstance(exc, psycopg.OperationalError):  # server down, restarting, connection lost
        mapped = StorageBusyError(
            f"{where}database unavailable ({exc}); a write in flight is whole or absent"
        )
    else:
        mapped = SqlmemError(f"{where}{type(exc).__name__}: {exc}")
    mapped.__cause__ = exc
    return mapped


def commit_unknown(exc: BaseException, context: str) -> CommitUnknownError:
    """The error for a connection lost while its write was committing, `exc` as cause."""
    where = f"{context}: " if context else ""
    mapped = CommitUnknownError(
        f"{where}connection lost while the write was committing ({str(exc).strip()}); it may "
        "or may not be stored: read it back before writing it again"
    )
    mapped.__cause__ = exc
    return mapped


@contextmanager
def translate(context: str = "") -> Iterator[None]:
    """Re-raise any psycopg or pool error inside the block as a sqlmem error."""
    try:
        yield
    except (psycopg.Error, psycopg_pool.PoolTimeout, psycopg_pool.PoolClosed) as exc:
        raise map_error(exc, context) from exc
