"""What the adapters written against the `Database` protocol hold: any database (SQLite,
in memory, PostgreSQL) and a private runner that keeps its calls off the event loop.

`db_or_path` takes a `Database` the program already has (the adapter shares it and never
closes it), its async wrapper, or a target for `sqlmem.open` (the adapter opens it and
closes it with itself).

A target is opened on first use, not in the constructor: async applications build these
services inside their event loop, and opening a file stats, reads and may migrate it (a
server, connects). An async call opens it on the runner's thread.
"""

from __future__ import annotations

import os
from typing import Union

from ..aio.db import AsyncMemoryDB
from ..protocols import Database
from ._backend import Backend

__all__ = ["AnyBackend", "AnyDbOrPath"]

#: What these adapters' `db_or_path` takes: a database, its async wrapper, or a target of
#: `sqlmem.open` (a file path or ":memory:").
AnyDbOrPath = Union[Database, AsyncMemoryDB, str, "os.PathLike[str]"]


def _checked_target(given: str | os.PathLike[str]) -> str:
    """A target of `sqlmem.open` as text; a file path that can never be a database is
    refused now, without touching the disk (it is opened on first use)."""
    from ..opening import MEMORY_TARGET, is_postgres_url
    from ..sqlite.db import check_path

    target = os.fspath(given)
    if isinstance(target, str) and (target == MEMORY_TARGET or is_postgres_url(target)):
        return target
    return check_path(target)


class AnyBackend(Backend):
    """`Backend` over any target of `sqlmem.open` (a file path, ":memory:" or a PostgreSQL
    URL), not only a SQLite file's path."""

    def _checked_target(self, given: str | os.PathLike[str]) -> str:
        return _checked_target(given)

    def _open_target(self, target: str) -> Database:
        from ..opening import open as open_target

        return open_target(target)
