"""Deeply nested metadata is refused alike everywhere (issue 23 item 13).

Metadata nested ~1,000 levels raised RecursionError (Python's JSON encoder) from `index`,
`search(metadata=)`, `search_by_metadata` and `append`, and from building the record.
Now every entry point refuses more than `MAX_METADATA_DEPTH` levels with
InvalidArgumentError naming the field (also when a record is built), on both backends;
up to the limit everything works and round-trips.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem import Fact, InvalidArgumentError, Message
from sqlmem.inmemory.facts import InMemoryFactStore
from sqlmem.inmemory.history import InMemoryHistoryStore
from sqlmem.protocols import FactStore, HistoryStore
from sqlmem.records import MAX_METADATA_DEPTH

Stores = tuple[FactStore, HistoryStore]


def nested(levels: int, *, array: bool = False) -> Any:
    """A value `levels` containers deep (objects, or arrays)."""
    value: Any = "leaf"
    for _ in range(levels):
        value = [value] if array else {"k": value}
    return value


@pytest.fixture(params=["sqlite", "memory"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        yield InMemoryFactStore(), InMemoryHistoryStore()
        return
    with sqlmem.open(tmp_path / "memory.db") as db:
        yield db.facts, db.history


@pytest.mark.parametrize("levels", [MAX_METADATA_DEPTH, 1_000, 5_000])
@pytest.mark.parametrize("array", [False, True])
def test_too_deep_metadata_is_an_invalid_argument(stores: Stores, levels: int, array: bool) -> None:
    """issue 23 item 13: RecursionError at ~1,000 levels; now InvalidArgumentError
    naming the field and the limit from every entry point, and nothing is stored."""
    facts, history = stores
    too_deep = {"m": nested(levels, array=array)}  # levels + 1 > MAX_METADATA_DEPTH
    fact = Fact(id="f", content="hello")
    fact.metadata = too_deep  # records are mutable: the stores check again
    message = Message(role="user", content="hello")
    message.metadata = too_deep
    calls: list[tuple[str, Callable[[], object]]] = [
        ("Fact.metadata", lambda: facts.index(fact)),
        ("Fact.metadata", lambda: facts.index_many([fact])),
        ("metadata", lambda: facts.search("hello", metadata=too_deep)),
        ("metadata", lambda: facts.search_by_metadata("m", too_deep["m"])),
        ("message.metadata", lambda: history.append("s", message)),
        ("message", lambda: history.append_many("s", [message])),
    ]
    for field, call in calls:
        with pytest.raises(InvalidArgumentError, match=str(MAX_METADATA_DEPTH)) as info:
            call()
        assert field in str(info.value)
    assert facts.count() == 0 and history.get_all("s") == []
    for build in (
        lambda: Fact(content="x", metadata=too_deep),
        lambda: Message(role="user", content="x", metadata=too_deep),
    ):
        with pytest.raises(InvalidArgumentError, match="MAX_METADATA_DEPTH"):
            build()


@pytest.mark.parametrize("array", [False, True])
def test_metadata_up_to_the_limit_works_everywhere(stores: Stores, array: bool) -> None:
    facts, history = stores
    deepest = {"m": nested(MAX_METADATA_DEPTH - 1, array=array)}  # the limit exactly
    facts.index(Fact(id="f", content="hello", metadata=deepest))
    facts.index(Fact(id="g", content="hello", metadata={"m": 1}))
    got = facts.get("f")
    assert got is not None and got.metadata == deepest
    assert [f.id for f in facts.search("hello", metadata=deepest)] == ["f"]
    assert [f.id for f in facts.search_by_metadata("m", deepest["m"])] == ["f"]
    history.append("s", Message(role="user", content="hi", metadata=deepest))
    assert history.get_all("s")[0].metadata == deepest
