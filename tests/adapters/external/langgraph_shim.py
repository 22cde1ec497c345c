"""`SqlmemStore` under the name and constructor of langgraph-checkpoint-sqlite's
`SqliteStore`, to run that package's own store tests against sqlmem.

Not collected by pytest: `suites.py` beside this file substitutes it into the tests of
the installed release's sdist (`from langgraph.store.sqlite import SqliteStore` becomes
`from langgraph_shim import SqliteStore`, and the same for `AsyncSqliteStore`) and runs
them; `pytest -m frameworks tests/adapters/test_framework_suites.py` in CI.

`from_conn_string(":memory:")` gets a fresh file in a temporary folder, removed on exit;
with `SQLMEM_SHIM_POSTGRES_DSN` set, an agent of that PostgreSQL database instead (a
fresh one for `":memory:"`, one per file otherwise; `shim_backend`): the same tests then
judge the store on PostgreSQL.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from shim_backend import postgres_agent

from sqlmem.adapters.langgraph import AsyncSqlmemStore, SqlmemStore


class SqliteStore(SqlmemStore):
    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, **kwargs: Any) -> Iterator[SqliteStore]:
        scratch = None
        agent = postgres_agent(conn_string)
        if agent is None and conn_string == ":memory:":
            scratch = tempfile.mkdtemp(prefix="sqlmem-store-")
            conn_string = str(Path(scratch) / "memory.db")
        store = cls(agent if agent is not None else conn_string, **kwargs)
        try:
            yield store
        finally:
            store.close()
            if agent is not None:
                agent.close()
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)

    def setup(self) -> None:
        """Migrations run when the file opens."""


class AsyncSqliteStore(AsyncSqlmemStore):
    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, **kwargs: Any
    ) -> AsyncIterator[AsyncSqliteStore]:
        scratch = None
        agent = postgres_agent(conn_string)
        if agent is None and conn_string == ":memory:":
            scratch = tempfile.mkdtemp(prefix="sqlmem-store-")
            conn_string = str(Path(scratch) / "memory.db")
        store = cls(agent if agent is not None else conn_string, **kwargs)
        try:
            yield store
        finally:
            store.close()
            if agent is not None:
                agent.close()
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)

    async def setup(self) -> None:
        """Migrations run when the file opens."""
