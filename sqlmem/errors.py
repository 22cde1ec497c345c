"""sqlmem's error hierarchy: what every backend raises and every caller catches.

It knows no backend: the SQLite engine's own errors become these in
`sqlmem.sqlite.apsw_errors`, the PostgreSQL driver's in `sqlmem.postgres.errors`, so
importing this module (as `import sqlmem` does) loads neither driver.
`translate_errors` and `map_apsw_error` are still importable from here, loaded from the
SQLite side on first use.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .sqlite.apsw_errors import map_apsw_error as map_apsw_error
    from .sqlite.apsw_errors import translate_errors as translate_errors

__all__ = [
    "CommitUnknownError",
    "CorruptDatabaseError",
    "DocumentNotFoundError",
    "EditMismatchError",
    "ExtractionError",
    "FactNotFoundError",
    "InvalidAgentIdError",
    "InvalidArgumentError",
    "InvalidQueryError",
    "MigrationChecksumError",
    "MigrationError",
    "MissingExtraError",
    "RevisionConflictError",
    "SchemaTooNewError",
    "SqlmemError",
    "StorageBusyError",
    "StoreClosedError",
    "map_os_error",
]


class SqlmemError(Exception):
    """Base of every error sqlmem raises on purpose."""


class InvalidArgumentError(SqlmemError, ValueError):
    """An argument or configuration value is not acceptable; the message names it."""


class InvalidAgentIdError(InvalidArgumentError):
    """An agent id that could escape its folder or is otherwise not allowed."""


class InvalidQueryError(InvalidArgumentError):
    """A raw-mode FTS5 query that SQLite cannot parse."""


class FactNotFoundError(SqlmemError, KeyError):
    """`delete` was asked to remove a fact id that is not stored."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class DocumentNotFoundError(SqlmemError, KeyError):
    """A workspace document (or one of its revisions) that is not stored."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class EditMismatchError(InvalidArgumentError):
    """`DocumentStore.edit` found `old_text` zero times, or more than once without
    `replace_all`; the message says how many times."""


class RevisionConflictError(SqlmemError):
    """A document change asked for with `expected_revision` found the document at another
    revision (changed, created or deleted by another writer since it was read); nothing
    was changed. Read it again and redo the change on what is there now."""


class StoreClosedError(SqlmemError, RuntimeError):
    """The database (or the factory that owned it) was closed. A `RuntimeError` too, as
    Python's own "use after close" errors are (an executor after shutdown, a closed event
    loop), so code written for the frameworks' sessions catches it."""


class StorageBusyError(SqlmemError):
    """Another writer held the database for longer than the busy timeout."""


class CommitUnknownError(StorageBusyError):
    """The connection to the database server was lost while a write was committing, so
    whether it is stored cannot be known from here (a server crash or failover at that
    instant). Unlike every other `StorageBusyError`, writing it again may store it twice:
    read it back first (the session's last messages, the fact by id, the document's
    revision), then write what is missing."""


class MigrationError(SqlmemError):
    """The schema could not be brought to the version this code expects."""


class SchemaTooNewError(MigrationError):
    """The file was written by a newer sqlmem; it is left untouched."""


class MigrationChecksumError(MigrationError):
    """An applied migration file was edited after it ran."""


class CorruptDatabaseError(SqlmemError):
    """The file is not a SQLite database, or its pages are damaged."""


class ExtractionError(SqlmemError):
    """A fact extractor's completion function failed or answered something not text."""


class MissingExtraError(SqlmemError, ImportError):
    """A module of sqlmem needs an optional extra that is not installed; the message names
    it (`pip install 'sqlmem[...]'`). Also an ImportError, so code that probes for an
    optional feature with `except ImportError` keeps working."""


#: OS errors that mean the path itself can never work as given (not a refusal that a
#: change of permissions, space or time could lift).
_BAD_PATH_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR, errno.EISDIR})


def map_os_error(exc: OSError, path: object, what: str) -> SqlmemError:
    """The sqlmem error for a file-system call on `path` that failed; `exc` is its cause.

    Paths reach the OS before SQLite sees them (folders and files are created by us), so
    their failures are mapped here rather than left as OSError: InvalidArgumentError when
    the path cannot work (name too long, symlink loop, a file where a folder should be),
    SqlmemError for the OS's refusal (permissions, read-only or full disk).
    """
    reason = exc.strerror or str(exc) or type(exc).__name__
    cls = InvalidArgumentError if exc.errno in _BAD_PATH_ERRNOS else SqlmemError
    mapped = cls(f"{path}: {what} ({reason})")
    mapped.__cause__ = exc
    return mapped


#: Names whose home moved to the SQLite backend; reading them here loads that module.
_SQLITE_NAMES = frozenset({"map_apsw_error", "translate_errors"})


def __getattr__(name: str) -> Any:
    """`translate_errors` and `map_apsw_error` for code that imports them from here: they
    need apsw, which this module must not load unless SQLite is actually used."""
    if name in _SQLITE_NAMES:
        from .sqlite import apsw_errors

        return getattr(apsw_errors, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
