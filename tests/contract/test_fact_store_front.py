"""One fact store front on every backend: `db.facts` is the `FactStoreFront` over that
backend's port, the port satisfies `FactStorePort`, and the calls the front decides
(argument checks, errors, empty answers) never reach the port."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from targets import BACKENDS, Target, backend_target

import sqlmem
from sqlmem import Fact, FactNotFoundError, InvalidArgumentError
from sqlmem.protocols import Database, FactStore
from sqlmem.stores.facts import FactStoreFront
from sqlmem.stores.facts_port import FactStorePort

#: The backend's store class (kept importable by name) and its port.
EXPECTED = {
    "sqlite": ("SQLiteFactStore", "SQLiteFactPort"),
    "memory": ("InMemoryFactStore", "InMemoryFactPort"),
    "postgres": ("PostgresFactStore", "PostgresFactPort"),
}


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    return backend_target(request, tmp_path)


@pytest.fixture
def db(target: Target) -> Iterator[Database]:
    opened = sqlmem.open(target.target, agent_id=target.agent_id)
    yield opened
    opened.close()


def test_the_store_is_the_front_over_a_port(target: Target, db: Database) -> None:
    facts = db.facts
    assert isinstance(facts, FactStoreFront)
    assert isinstance(facts, FactStore)
    assert isinstance(facts.port, FactStorePort)
    store_name, port_name = EXPECTED[target.kind]
    assert type(facts).__name__ == store_name
    assert type(facts.port).__name__ == port_name
    assert repr(facts) == repr(facts.port)
    assert facts.embedder is None


class _Refusing:
    """A port every call of which fails the test: for what the front alone decides."""

    raw_refusal = None

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the front called port.{name}")


def test_the_front_decides_before_the_port() -> None:
    front = FactStoreFront(_Refusing())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        front.index("not a fact")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        front.index_many("text")  # type: ignore[arg-type]
    assert front.index_many([]) == []
    assert front.get("x" * 10_000) is None
    with pytest.raises(FactNotFoundError):
        front.delete("x" * 10_000)
    assert front.delete_many([]) == 0
    with pytest.raises(InvalidArgumentError):
        front.search("q", mode="nope")  # type: ignore[arg-type]
    assert front.search("q", 0, mode="raw") == []
    assert front.search("   ", mode="raw") == []
    assert front.list(limit=0) == []
    assert front.search_by_metadata("k", 1, limit=0) == []
    with pytest.raises(InvalidArgumentError):
        front.search_by_metadata(1, 1)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        front.history(key="k", id="i")
    with pytest.raises(InvalidArgumentError):
        front.promote("f", "no such layer")


def test_a_batch_reaches_the_port_checked_and_merged() -> None:
    """Every fact is checked before any is written, and repeated ids are merged once, in
    the front, for every backend."""
    written: list[Any] = []

    class Recording(_Refusing):
        def write(self, rows: Any, *, embed: bool) -> None:
            written.append(([r.id for r in rows], embed))

    front = FactStoreFront(Recording())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        front.index_many([Fact(id="a", content="x"), "not a fact"])  # type: ignore[list-item]
    assert written == []
    ids = front.index_many(
        [Fact(id="a", content="x"), Fact(id="b", content="y"), Fact(id="a", content="z")]
    )
    assert ids == ["a", "b", "a"]
    assert written == [(["a", "b"], True)]
