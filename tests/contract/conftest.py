"""Fixtures of the contract suites: one behaviour suite, every implementation.

`make_history(**config)` builds a history store of the parametrised kind ("sqlite" over a
fresh file in tmp_path, or "memory"); SQLite engines are closed when the test ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sqlmem.config import StoreConfig
from sqlmem.memory.history import InMemoryHistoryStore
from sqlmem.protocols import HistoryStore
from sqlmem.sqlite.engine import Engine
from sqlmem.sqlite.history import SQLiteHistoryStore, index_unsearchable_messages

MakeHistory = Callable[..., HistoryStore]


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def make_history(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeHistory]:
    engines: list[Engine] = []

    def make(**config: object) -> HistoryStore:
        cfg = StoreConfig(**config)
        if request.param == "memory":
            return InMemoryHistoryStore(cfg)
        if request.param == "postgres":  # a fresh agent of the session's server
            return request.getfixturevalue("open_pg")(**config).history  # type: ignore[no-any-return]
        engine = Engine(
            tmp_path / f"history-{len(engines)}.db", cfg, hooks=(index_unsearchable_messages,)
        )
        engines.append(engine)
        return SQLiteHistoryStore(engine)

    yield make
    for engine in engines:
        engine.close()


@pytest.fixture
def history(make_history: MakeHistory) -> HistoryStore:
    return make_history()
