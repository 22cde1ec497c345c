"""Fixtures of the inspector's tests: a demo database on each backend and a TestClient
that already holds the token cookie."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from targets import BACKENDS, Target, backend_target
from ui_demo import fill

import sqlmem
from sqlmem.protocols import Database
from sqlmem.ui import create_app
from sqlmem.ui.security import COOKIE

TOKEN = "test-token-0123456789"


@pytest.fixture(params=BACKENDS)
def any_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """The demo memory on SQLite, in memory and on PostgreSQL."""
    target: Target = backend_target(request, tmp_path)
    if target.agent_id is None:
        db: Database = sqlmem.open(target.target)
    else:
        db = sqlmem.open(target.target, agent_id=target.agent_id)
    with db:
        fill(db)
        yield db


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[Database]:
    with sqlmem.open(tmp_path / "memory.db") as db:
        yield db


@pytest.fixture
def demo_db(sqlite_db: Database) -> Database:
    fill(sqlite_db)
    return sqlite_db


def client_for(db: Database, *, write: bool = False, **options: Any) -> TestClient:
    """A client that opened the token URL once (so it holds the cookie)."""
    client = TestClient(create_app(db, token=TOKEN, write=write), **options)
    first = client.get(f"/?token={TOKEN}", follow_redirects=False)
    assert first.status_code == 303 and COOKIE in client.cookies
    return client


@pytest.fixture
def make_client() -> Callable[..., TestClient]:
    return client_for
