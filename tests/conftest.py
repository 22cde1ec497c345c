"""Shared fixtures: every database a test opens through `open_db` is closed afterwards."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

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
def db(open_db: Callable[..., sqlmem.MemoryDB]) -> sqlmem.MemoryDB:
    return open_db()
