"""The one place where apsw errors become sqlmem's.

apsw raises one class per SQLite result code. Callers of sqlmem should never have to
import apsw to handle a failure, so every call that touches SQLite runs inside
`translate_errors()` (or maps a caught error with `map_apsw_error`), which raises the most
specific sqlmem error with the apsw exception kept as `__cause__`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import apsw

from ..errors import (
    CorruptDatabaseError,
    InvalidArgumentError,
    SqlmemError,
    StorageBusyError,
    StoreClosedError,
)

__all__ = ["map_apsw_error", "translate_errors"]


def _map(exc: apsw.Error, context: str) -> SqlmemError:
    """Pick the sqlmem class for one apsw exception."""
    where = f"{context}: " if context else ""
    detail = f"{where}{exc}"
    if isinstance(exc, (apsw.BusyError, apsw.LockedError)):
        return StorageBusyError(f"{where}database is busy (another writer held it too long)")
    if isinstance(exc, (apsw.CorruptError, apsw.NotADBError)):
        return CorruptDatabaseError(f"{where}not a valid SQLite database or damaged ({exc})")
    if isinstance(exc, (apsw.ConnectionClosedError, apsw.CursorClosedError)):
        return StoreClosedError(f"{where}store is closed")
    if isinstance(exc, apsw.FullError):
        return SqlmemError(f"{where}disk or database full ({exc})")
    if isinstance(exc, apsw.CantOpenError):
        return SqlmemError(f"{where}cannot open database file ({exc})")
    if isinstance(exc, apsw.ReadOnlyError):
        return SqlmemError(f"{where}database is read-only ({exc})")
    if isinstance(exc, apsw.IOError):
        return SqlmemError(f"{where}I/O error ({exc})")
    if isinstance(exc, apsw.TooBigError):
        return InvalidArgumentError(f"{where}value too large for SQLite ({exc})")
    return SqlmemError(detail)


def map_apsw_error(exc: apsw.Error, context: str = "") -> SqlmemError:
    """The sqlmem error for `exc`, with `exc` as its cause."""
    mapped = _map(exc, context)
    mapped.__cause__ = exc
    return mapped


@contextmanager
def translate_errors(context: str = "") -> Iterator[None]:
    """Re-raise any apsw error inside the block as a sqlmem error.

    `context` (usually the database path) is prefixed to the message so a user with
    several databases knows which one failed.
    """
    try:
        yield
    except apsw.Error as exc:
        raise map_apsw_error(exc, context) from exc
