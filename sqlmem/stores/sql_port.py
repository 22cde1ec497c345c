"""What the shared SQL ports (`sql_history`, ...) need of a database engine.

SQLite and PostgreSQL differ in their SQL text (placeholders, FTS5 or tsvector, upsert
syntax) and in a few codecs, not in the Python around a statement: open a read or a write
transaction, run a constant statement with bound values, turn the rows into records. A
shared port does that once over these protocols; each backend hands it its engine, its
statements (the same names in each dialect's `*_sql` module) and its codec.

Statements of a shared port bind their values BY NAME (`:session` on SQLite,
`%(session)s` on PostgreSQL), so one dict of values serves both; a statement ignores the
names it does not use (`agent` on SQLite, where a file holds one agent). Driver errors
are mapped to `SqlmemError` by the engines' `read()` and `write()`, which every call here
goes through.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ..config import StoreConfig

__all__ = ["SqlConnection", "SqlCursor", "SqlEngine", "first_value", "plain_text"]


class SqlCursor(Protocol):
    """A statement's result: apsw's and psycopg's cursors both are one."""

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class SqlConnection(Protocol):
    """A connection inside an engine's transaction (apsw's and psycopg's both are one)."""

    def execute(self, statement: str, params: Any = ..., /) -> SqlCursor: ...


class SqlEngine(Protocol):
    """One backend's engine: its settings, and its way into a read and a write
    transaction, each mapping the driver's errors."""

    @property
    def config(self) -> StoreConfig: ...

    def read(self) -> AbstractContextManager[Any]: ...

    def snapshot(self) -> AbstractContextManager[Any]: ...

    def write(self) -> AbstractContextManager[Any]: ...


def first_value(cursor: SqlCursor) -> Any:
    """The first column of the first row, None when there is no row. Reads every row, so
    a statement with RETURNING runs to completion (SQLite commits no transaction with a
    writing statement still open)."""
    rows = cursor.fetchall()
    return rows[0][0] if rows else None


def plain_text(value: str) -> str:
    """Text as SQLite stores it: as it is (PostgreSQL escapes NUL, `postgres.codec`)."""
    return value
