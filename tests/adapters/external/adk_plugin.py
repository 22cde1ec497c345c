"""A pytest plugin that runs Google ADK's own session and memory tests with sqlmem's
services substituted (`tests/adapters/external/adk_suite.py` downloads the tests and
loads this plugin).

- `tests/unittests/sessions/test_session_service.py`: every test taking the
  `session_service` fixture (the behaviour every `BaseSessionService` owes its callers)
  runs against `SqlmemSessionService`; the fixture's four parameters map to sqlmem's
  backends: IN_MEMORY and IN_MEMORY_WITH_LIGHT_COPY_ENABLED to `sqlmem.open(":memory:")`,
  SQLITE to a SQLite file, DATABASE to PostgreSQL (a throwaway server, or
  SQLMEM_TEST_POSTGRES_DSN). The file's other tests drive ADK's own backends' internals
  (mocked SQLAlchemy sessions, private tables) and are deselected.
- `tests/unittests/memory/test_in_memory_memory_service.py`: `InMemoryMemoryService` is
  replaced by `SqlmemMemoryService` over a fresh SQLite file; the tests reading the
  in-memory service's private dict (`_session_events`) are deselected (INTERNAL below).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem.adapters.adk import SqlmemMemoryService, SqlmemSessionService

_TESTS = Path(__file__).resolve().parents[2]
if str(_TESTS) not in sys.path:  # for pgserver
    sys.path.insert(0, str(_TESTS))

#: Tests of the in-memory memory service that read its private storage dict.
INTERNAL = frozenset(
    {
        "test_add_session_to_memory",
        "test_add_events_to_memory_with_explicit_events",
        "test_add_events_to_memory_without_session_id_uses_default_bucket",
        "test_add_events_to_memory_alias_is_supported",
        "test_add_events_to_memory_appends_without_replacing",
        "test_add_events_to_memory_deduplicates_event_ids",
        "test_add_session_with_no_events_to_memory",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        path = str(item.path)
        name = getattr(item, "originalname", item.name)
        if path.endswith("sessions/test_session_service.py"):
            keep = "session_service" in getattr(item, "fixturenames", ())
        elif path.endswith("memory/test_in_memory_memory_service.py"):
            keep = name not in INTERNAL
        else:
            keep = True
        (kept if keep else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


class _Postgres:
    """One throwaway server for the run, started on first use."""

    backend: Any = None
    server: Any = None

    @classmethod
    def open(cls) -> sqlmem.Database:
        from pgserver import new_agent_id, start

        from sqlmem.postgres import PostgresBackend

        if cls.backend is None:
            dsn = os.environ.get("SQLMEM_TEST_POSTGRES_DSN")
            if not dsn:
                cls.server = start()
                dsn = cls.server.dsn
            cls.backend = PostgresBackend(dsn, pool_size=4)
        db: sqlmem.Database = cls.backend.open(new_agent_id())
        return db


def pytest_unconfigure(config: pytest.Config) -> None:
    if _Postgres.backend is not None:
        _Postgres.backend.close()
    if _Postgres.server is not None:
        _Postgres.server.stop()


def _open(kind: str, folder: Path) -> sqlmem.Database:
    if kind == "DATABASE":
        return _Postgres.open()
    if kind == "SQLITE":
        return sqlmem.open(folder / f"adk-{len(os.listdir(folder))}.db")
    return sqlmem.open(":memory:")


@pytest.fixture(autouse=True)
def _sqlmem_substituted(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    module = request.module
    opened: list[Any] = []
    folder = Path(tempfile.mkdtemp(prefix="sqlmem-adk-"))
    if hasattr(module, "get_session_service") and hasattr(module, "SessionServiceType"):

        def make_session_service(
            service_type: Any = None, tmp_path: Any = None
        ) -> SqlmemSessionService:
            db = _open(getattr(service_type, "name", "IN_MEMORY"), folder)
            service = SqlmemSessionService(db)
            opened.append((service, db))
            return service

        monkeypatch.setattr(module, "get_session_service", make_session_service)
    if hasattr(module, "InMemoryMemoryService"):

        def make_memory_service() -> SqlmemMemoryService:
            db = sqlmem.open(folder / f"memory-{len(opened)}.db")
            service = SqlmemMemoryService(db)
            opened.append((service, db))
            return service

        monkeypatch.setattr(module, "InMemoryMemoryService", make_memory_service)
    yield
    for service, db in opened:
        asyncio.run(service.close())
        db.close()
