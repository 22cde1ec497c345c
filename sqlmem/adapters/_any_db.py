"""What the adapters written against the `Database` protocol hold: any database (SQLite,
in memory, PostgreSQL) and a private runner that keeps its calls off the event loop.

`db_or_path` takes a `Database` the program already has (the adapter shares it and never
closes it), its async wrapper, or a target for `sqlmem.open` (the adapter opens it and
closes it with itself).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar, Union

from ..aio.db import AsyncMemoryDB
from ..aio.runner import Runner
from ..errors import InvalidArgumentError
from ..protocols import Database
from ._backend import settle

__all__ = ["AnyBackend", "AnyDbOrPath"]

R = TypeVar("R")

#: What these adapters' `db_or_path` takes: a database, its async wrapper, or a target of
#: `sqlmem.open` (a file path or ":memory:").
AnyDbOrPath = Union[Database, AsyncMemoryDB, str, "os.PathLike[str]"]


class AnyBackend:
    """A database and a runner, closed together (the database only when we opened it)."""

    def __init__(self, db_or_path: AnyDbOrPath, owner: str) -> None:
        given: object = getattr(db_or_path, "sync", db_or_path)
        if isinstance(given, (str, os.PathLike)):
            from ..opening import open as open_target

            self.db: Database = open_target(os.fspath(given))
            self._owns_db = True
        elif isinstance(given, Database):
            self.db, self._owns_db = given, False
        else:
            raise InvalidArgumentError(
                f"{owner}: db_or_path must be a sqlmem database, its async wrapper or a "
                f"path, not {type(given).__name__}"
            )
        self._runner = Runner(name=owner, owner=self.db)

    async def run(self, call: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
        """`call(*args, **kwargs)` on a runner thread, awaited."""
        return await self._runner.run(functools.partial(call, *args, **kwargs))

    async def write(self, call: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
        """A write awaited to its end even when the caller is cancelled meanwhile."""
        run = self._runner.run(functools.partial(call, *args, **kwargs), write=True)
        return await settle(run)

    def close(self) -> None:
        """Waits for calls in flight; idempotent."""
        self._runner.shutdown()
        if self._owns_db:
            self.db.close()
