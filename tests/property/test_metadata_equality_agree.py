"""`search_by_metadata(key, value)` on SQLite reads a scalar through the key's JSON path
(`scalar_equality`) instead of walking the metadata: random keys (dots,
brackets, quotes, backslashes, control characters, non-ASCII, empty) and random scalar
values of every JSON type must select exactly the facts the in-memory store selects, in
the same order, with and without a limit; `true`, `1`, `1.0` and `"1"` stay four
values."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlmem.config import StoreConfig
from sqlmem.inmemory.facts import InMemoryFactStore
from sqlmem.records import Fact
from sqlmem.rules.filters import metadata_equal_filter
from sqlmem.sqlite.core.engine import Engine
from sqlmem.sqlite.stores.facts import SQLiteFactStore, scalar_equality

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)

key_text = st.text(
    st.sampled_from(["a", ".", "[", "]", "$", '"', "\\", "\x00", "\n", "é", "😀", " ", "*"]),
    max_size=4,
)
keys = st.one_of(st.sampled_from(["kind", "a.b", "", "é", "x[0]", "$"]), key_text)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, -1, 2**63 - 1, -(2**63)]),
    st.sampled_from([0.0, -0.0, 1.0, 0.1, 1e-300, 1e18, 2.0**63]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "1", "true", "null", "note", "é", "a\x00b", '"q"', "\\"]),
)
values = st.one_of(
    scalars, st.lists(scalars, max_size=2), st.dictionaries(keys, scalars, max_size=2)
)


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteFactStore]:
    engine = Engine(tmp_path_factory.mktemp("equal") / "facts.db", StoreConfig())
    yield SQLiteFactStore(engine)
    engine.close()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    key=keys,
    wanted=values,
    stored=st.lists(st.one_of(scalars, values), min_size=1, max_size=10),
    limit=st.one_of(st.none(), st.integers(0, 4)),
)
def test_sqlite_and_in_memory_agree(
    sqlite_store: SQLiteFactStore, key: str, wanted: Any, stored: list[Any], limit: int | None
) -> None:
    facts = [
        Fact(
            id=f"f{i}",
            content=f"word {i}",
            # some facts hold the wanted value itself, some others a value of the list,
            # some lack the key (another key holds the value)
            metadata={key: wanted} if i % 4 == 0 else {key: v} if i % 4 != 3 else {"o": v},
            created_at=T0 + timedelta(seconds=i),
        )
        for i, v in enumerate(stored)
    ]
    twin = InMemoryFactStore()
    sqlite_store.delete_many([f.id for f in sqlite_store.list(limit=1000)])
    sqlite_store.index_many(facts)
    twin.index_many(facts)
    got = [f.id for f in sqlite_store.search_by_metadata(key, wanted, limit=limit)]
    expected = [f.id for f in twin.search_by_metadata(key, wanted, limit=limit)]
    assert got == expected
    as_filter = {key: {"$eq": wanted}}  # a mapping of `$` keys is a value only here
    assert [f.id for f in sqlite_store.list(metadata=as_filter, limit=1000)] == [
        f.id for f in twin.list(metadata=as_filter, limit=1000)
    ]


def test_typed_values_stay_distinct(sqlite_store: SQLiteFactStore) -> None:
    """The scalar path compares JSON types as the general predicate does."""
    sqlite_store.delete_many([f.id for f in sqlite_store.list(limit=1000)])
    values: list[Any] = [True, 1, 1.0, "1", None, False, 0, ""]
    sqlite_store.index_many(
        [Fact(id=f"v{i}", content="v", metadata={"k": v}) for i, v in enumerate(values)]
    )
    for i, value in enumerate(values):
        assert scalar_equality(metadata_equal_filter("k", value)) is not None
        assert [f.id for f in sqlite_store.search_by_metadata("k", value)] == [f"v{i}"]
    assert sqlite_store.search_by_metadata("absent", None) == []


def test_which_filters_take_the_path() -> None:
    """One scalar equality on a key a quoted path spells; anything else keeps the general
    predicate (a key with a quote, a backslash or a control character; containers)."""
    assert scalar_equality(metadata_equal_filter("a.b", 2)) == ('$."a.b"', "2")
    for key in ('q"', "back\\slash", "nul\x00", "line\n"):
        assert scalar_equality(metadata_equal_filter(key, 1)) is None
    assert scalar_equality(metadata_equal_filter("k", [1])) is None
    assert scalar_equality(metadata_equal_filter("k", {"a": 1})) is None
