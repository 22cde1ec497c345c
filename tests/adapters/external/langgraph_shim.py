"""`SqlmemStore` under the name and constructor of langgraph-checkpoint-sqlite's
`SqliteStore`, to run that package's own store tests against sqlmem.

Not collected by pytest: `suites.py` beside this file substitutes it into the tests of
the installed release's sdist (`from langgraph.store.sqlite import SqliteStore` becomes
`from langgraph_shim import SqliteStore`, and the same for `AsyncSqliteStore`) and runs
them; `pytest -m frameworks tests/adapters/test_framework_suites.py` in CI.

`from_conn_string(":memory:")` gets a fresh file in a temporary folder, removed on exit;
with `SQLMEM_SHIM_POSTGRES_DSN` set (a `postgresql://` URL), a fresh agent of that
PostgreSQL database instead: the same tests then judge the store on PostgreSQL. Result
(3.1.1, a throwaway PostgreSQL 15): the same 103 of 105 pass, the same two fail.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import sqlmem
from sqlmem.adapters.langgraph import AsyncSqlmemStore, SqlmemStore


def _postgres_agent() -> Any:
    """A fresh agent of `SQLMEM_SHIM_POSTGRES_DSN` (None: the variable is not set)."""
    dsn = os.environ.get("SQLMEM_SHIM_POSTGRES_DSN")
    if not dsn:
        return None
    return sqlmem.open(dsn, agent_id=f"shim-{uuid.uuid4().hex[:12]}")  # a postgresql:// URL


class SqliteStore(SqlmemStore):
    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, **kwargs: Any) -> Iterator[SqliteStore]:
        scratch = None
        agent = _postgres_agent() if conn_string == ":memory:" else None
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
        agent = _postgres_agent() if conn_string == ":memory:" else None
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
