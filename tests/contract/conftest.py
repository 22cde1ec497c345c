"""Fixtures of the contract suites: one behaviour suite, every implementation.

`make_history(**config)` builds a history store of the parametrised kind ("sqlite" over a
fresh file in tmp_path, "memory", or "postgres": a fresh agent of the session's throwaway
server); SQLite engines are closed when the test ends.
`make_facts(**config)` does the same for fact stores.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sqlmem.config import StoreConfig
from sqlmem.inmemory.docs import InMemoryDocumentStore
from sqlmem.inmemory.facts import InMemoryFactStore
from sqlmem.inmemory.history import InMemoryHistoryStore
from sqlmem.protocols import DocumentStore, FactStore, HistoryStore
from sqlmem.sqlite.core.engine import Engine
from sqlmem.sqlite.stores.docs import SQLiteDocumentStore
from sqlmem.sqlite.stores.facts import SQLiteFactStore
from sqlmem.sqlite.stores.history import SQLiteHistoryStore, index_unsearchable_messages
from sqlmem.sqlite.stores.items import fill_fingerprints

MakeHistory = Callable[..., HistoryStore]
MakeFacts = Callable[..., FactStore]


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


MakeDocs = Callable[..., DocumentStore]


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def make_docs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeDocs]:
    """`make_docs(**config)`: a document store of the parametrised kind."""
    engines: list[Engine] = []

    def make(**config: object) -> DocumentStore:
        cfg = StoreConfig(**config)
        if request.param == "memory":
            return InMemoryDocumentStore(cfg)
        if request.param == "postgres":  # a fresh agent of the session's server
            return request.getfixturevalue("open_pg")(**config).docs  # type: ignore[no-any-return]
        engine = Engine(tmp_path / f"docs-{len(engines)}.db", cfg)
        engines.append(engine)
        return SQLiteDocumentStore(engine)

    yield make
    for engine in engines:
        engine.close()


@pytest.fixture
def docs(make_docs: MakeDocs) -> DocumentStore:
    return make_docs()


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def make_facts(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeFacts]:
    engines: list[Engine] = []

    def make(**config: object) -> FactStore:
        cfg = StoreConfig(**config)
        if request.param == "memory":
            return InMemoryFactStore(cfg)
        if request.param == "postgres":  # a fresh agent of the session's server
            return request.getfixturevalue("open_pg")(**config).facts  # type: ignore[no-any-return]
        engine = Engine(tmp_path / f"facts-{len(engines)}.db", cfg, hooks=(fill_fingerprints,))
        engines.append(engine)
        return SQLiteFactStore(engine)

    yield make
    for engine in engines:
        engine.close()
