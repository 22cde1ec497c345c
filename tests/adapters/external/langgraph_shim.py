"""`SqlmemStore` under the name and constructor of langgraph-checkpoint-sqlite's
`SqliteStore`, to run that package's own store tests against sqlmem (issue 20).

Not collected by pytest (the tests are not shipped in the wheel). With a checkout of
langgraph at the tag of the langgraph-checkpoint-sqlite release (checkpointsqlite==3.1.1
was used), that release installed beside sqlmem (its tests import private helpers of
`langgraph.store.sqlite.base`, e.g. `pip install --target site langgraph-checkpoint-sqlite
aiosqlite sqlite-vec --no-deps` and `site` on PYTHONPATH):

    cd langgraph/libs/checkpoint-sqlite
    # in tests/test_store.py and tests/test_ttl.py, replace the import of SqliteStore by
    #     from langgraph_shim import SqliteStore
    # (and AsyncSqliteStore's, in tests/test_async_store.py and tests/test_ttl.py, by
    #     from langgraph_shim import AsyncSqliteStore)
    PYTHONPATH=/path/to/sqlmem:/path/to/sqlmem/tests/adapters/external:site \
        python -m pytest -o addopts= -o asyncio_mode=auto \
        tests/test_store.py tests/test_async_store.py tests/test_ttl.py

Result (3.1.1): 103 of 105 pass. The two failures probe SqliteStore's internals:
`test_vector_store_initialization` reads `store.conn` (its sqlite3 connection) and
`test_nonnull_migrations` its `SqliteStore.MIGRATIONS` list.

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
