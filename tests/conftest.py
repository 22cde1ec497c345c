"""Shared fixtures: every database a test opens through `open_db` is closed afterwards."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

import sqlmem

settings.register_profile(
    "default",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile("default")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def open_db(tmp_path: Path) -> Iterator[Callable[..., sqlmem.MemoryDB]]:
    """`open_db(path=None, **config)`: a MemoryDB closed when the test ends."""
    opened: list[sqlmem.MemoryDB] = []

    def _open(path: Path | None = None, **config: object) -> sqlmem.MemoryDB:
        db = sqlmem.open(path or tmp_path / "memory.db", sqlmem.StoreConfig(**config))
        opened.append(db)
        return db

    yield _open
    for db in opened:
        db.close()


@pytest.fixture
def close_the_loop_run_sync_leaves() -> Iterator[None]:
    """Pydantic AI's `Agent.run_sync` makes a new event loop the thread's current one and
    leaves it open (it reuses it from call to call); a later `asyncio.run` would drop it
    unclosed (a ResourceWarning in whichever test comes next), so it is closed after each
    test of a module that runs agents or pages that do (`pytestmark = usefixtures(...)`)."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:  # none was left
            return
    loop.close()
    asyncio.set_event_loop(None)


@pytest.fixture
def db(open_db: Callable[..., sqlmem.MemoryDB]) -> sqlmem.MemoryDB:
    return open_db()


# -- PostgreSQL (issue 21) ----------------------------------------------------------------
#
# One throwaway server per test session (tests/pgserver.py), or SQLMEM_TEST_POSTGRES_DSN.
# A server that cannot start is an error, never a skip: the PostgreSQL tests run in CI.
# Tests stay independent through agent ids: each store gets an agent id of its own.


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    import os

    given = os.environ.get("SQLMEM_TEST_POSTGRES_DSN")
    if given:
        yield given
        return
    server = start_server()
    try:
        yield server.dsn
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_backend(pg_dsn: str) -> Iterator[Any]:
    """One shared backend (bounded pool) for the whole session, as an application has."""
    from sqlmem.postgres import PostgresBackend

    backend = PostgresBackend(pg_dsn, pool_size=8)
    yield backend
    backend.close()


from pgserver import new_agent_id  # noqa: E402 - tests/ is on sys.path (rootdir conftest)
from pgserver import start as start_server  # noqa: E402


@pytest.fixture
def open_pg(pg_backend: Any) -> Iterator[Callable[..., Any]]:
    """`open_pg(agent_id=None, **config)`: a PostgresDB of a fresh agent, closed afterwards."""
    opened: list[Any] = []

    def _open(agent_id: str | None = None, **config: object) -> Any:
        db = pg_backend.open(agent_id or new_agent_id(), sqlmem.StoreConfig(**config))
        opened.append(db)
        return db

    yield _open
    for db in opened:
        db.close()
