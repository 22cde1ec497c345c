"""Metadata operator expressions (SPEC 6, 0.2) on every fact store, in `search` and `list`.

One fact per kind of JSON value under the key "v" (and one without it), so every test can
say exactly which values an expression selects. The same expectations hold for the SQLite
store, the in-memory twin and the PostgreSQL store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from sqlmem.config import StoreConfig
from sqlmem.errors import InvalidArgumentError
from sqlmem.inmemory.facts import InMemoryFactStore
from sqlmem.protocols import FactStore
from sqlmem.records import Fact
from sqlmem.sqlite.core.engine import Engine
from sqlmem.sqlite.stores.facts import SQLiteFactStore

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)

#: fact id -> the value of its key "v" (absent: no "v" at all).
VALUES: dict[str, Any] = {
    "int1": 1,
    "float1": 1.0,
    "float25": 2.5,
    "neg": -3,
    "big": 2**63 - 1,
    "small": -(2**63),
    "true": True,
    "false": False,
    "str1": "1",
    "strb": "b",
    "strz": "z",
    "acute": "é",
    "emoji": "😀",
    "nul": "a\x00b",
    "empty": "",
    "null": None,
    "list": [1, "x"],
    "obj": {"a": 1, "b": [True]},
    "emptyobj": {},
}
ALL = [*VALUES, "absent"]


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], FactStore]]:
    engines: list[Engine] = []

    def make() -> FactStore:
        if request.param == "memory":
            return InMemoryFactStore()
        if request.param == "postgres":  # a fresh agent of the session's server
            return request.getfixturevalue("open_pg")().facts  # type: ignore[no-any-return]
        engine = Engine(tmp_path / f"facts-{len(engines)}.db", StoreConfig())
        engines.append(engine)
        return SQLiteFactStore(engine)

    yield make
    for engine in engines:
        engine.close()


@pytest.fixture
def store(make_store: Callable[[], FactStore]) -> FactStore:
    s = make_store()
    facts = [
        Fact(
            id=fid,
            content=f"apple {fid}",
            tags=["even" if i % 2 == 0 else "odd"],
            category="fruit/red" if i % 3 == 0 else "fruit",
            metadata={"v": value, "i": i},
            created_at=T0 + timedelta(minutes=i),
        )
        for i, (fid, value) in enumerate(VALUES.items())
    ]
    facts.append(
        Fact(id="absent", content="apple absent", tags=["odd"], metadata={"i": len(VALUES)},
             created_at=T0 + timedelta(minutes=len(VALUES)))
    )  # fmt: skip
    s.index_many(facts)
    return s


def matching(store: FactStore, expr: Any, key: str = "v") -> set[str]:
    """Ids selected by `{key: expr}` through search and list, which must agree."""
    by_search = {f.id for f in store.search("apple", top_k=100, metadata={key: expr})}
    by_list = {f.id for f in store.list(metadata={key: expr}, limit=100)}
    assert by_search == by_list, (by_search, by_list)
    return by_search


def but(*ids: str) -> set[str]:
    return set(ALL) - set(ids)


def test_eq_and_ne_are_typed(store: FactStore) -> None:
    assert matching(store, {"$eq": 1}) == {"int1"}
    assert matching(store, {"$eq": 1.0}) == {"float1"}
    assert matching(store, {"$eq": True}) == {"true"}
    assert matching(store, {"$eq": "1"}) == {"str1"}
    assert matching(store, {"$eq": None}) == {"null"}
    assert matching(store, {"$eq": {"b": [True], "a": 1}}) == {"obj"}  # key order: no matter
    assert matching(store, {"$eq": [1, "x"]}) == {"list"}
    assert matching(store, {"$eq": ["x", 1]}) == set()
    assert matching(store, {"$eq": {}}) == {"emptyobj"}
    assert matching(store, {"$eq": 2**63 - 1}) == {"big"}
    assert matching(store, {"$eq": "a\x00b"}) == {"nul"}
    # $ne also matches facts without the key
    assert matching(store, {"$ne": 1}) == but("int1")
    assert matching(store, {"$ne": {"a": 1, "b": [True]}}) == but("obj")
    assert matching(store, {"$ne": "nope"}) == set(ALL)


def test_an_empty_mapping_is_a_value_not_an_expression(store: FactStore) -> None:
    assert matching(store, {}) == {"emptyobj"}


def test_orderings_compare_numbers_with_numbers(store: FactStore) -> None:
    assert matching(store, {"$gt": 1}) == {"float25", "big"}
    assert matching(store, {"$gte": 1}) == {"int1", "float1", "float25", "big"}
    assert matching(store, {"$lt": 1}) == {"neg", "small"}
    assert matching(store, {"$lte": 1.0}) == {"int1", "float1", "neg", "small"}
    assert matching(store, {"$gt": 2**63 - 2}) == {"big"}
    assert matching(store, {"$lt": -(2**63) + 1}) == {"small"}
    assert matching(store, {"$gt": 2.4999999}) == {"float25", "big"}
    # 64-bit integers against floats compare by value, exactly
    assert matching(store, {"$lt": 9.3e18}) == {"int1", "float1", "float25", "neg", "big", "small"}
    assert matching(store, {"$gt": 9.3e18}) == set()


def test_orderings_compare_strings_with_strings(store: FactStore) -> None:
    assert matching(store, {"$gt": "a"}) == {"strb", "strz", "acute", "emoji", "nul"}
    assert matching(store, {"$lt": "b"}) == {"str1", "nul", "empty"}
    assert matching(store, {"$gte": "b", "$lte": "z"}) == {"strb", "strz"}
    assert matching(store, {"$gt": "z"}) == {"acute", "emoji"}  # code point order
    assert matching(store, {"$gt": "é"}) == {"emoji"}
    assert matching(store, {"$gte": ""}) == {
        "str1", "strb", "strz", "acute", "emoji", "nul", "empty",
    }  # fmt: skip
    assert matching(store, {"$gt": "a"}) & matching(store, {"$gt": 0}) == set()


@pytest.mark.parametrize("arg", [True, False, None, [1], {"a": 1}])
def test_orderings_against_other_types_never_match(store: FactStore, arg: Any) -> None:
    for op in ("$gt", "$gte", "$lt", "$lte"):
        assert matching(store, {op: arg}) == set(), op


def test_bool_is_not_a_number(store: FactStore) -> None:
    assert "true" not in matching(store, {"$gte": 0})
    assert "false" not in matching(store, {"$lte": 0})


def test_in_and_nin(store: FactStore) -> None:
    assert matching(store, {"$in": [1, "b", None]}) == {"int1", "strb", "null"}
    assert matching(store, {"$in": [[1, "x"], {"a": 1, "b": [True]}]}) == {"list", "obj"}
    assert matching(store, {"$in": [True, 1.0]}) == {"true", "float1"}
    assert matching(store, {"$in": ("z",)}) == {"strz"}  # a tuple is a JSON list
    assert matching(store, {"$in": []}) == set()
    assert matching(store, {"$nin": [1, "b"]}) == but("int1", "strb")
    assert matching(store, {"$nin": []}) == set(ALL)


def test_exists(store: FactStore) -> None:
    assert matching(store, {"$exists": True}) == but("absent")
    assert matching(store, {"$exists": False}) == {"absent"}
    assert matching(store, {"$exists": True}, key="nope") == set()
    assert matching(store, {"$exists": False}, key="nope") == set(ALL)


def test_several_operators_all_apply(store: FactStore) -> None:
    assert matching(store, {"$gte": 1, "$lt": 3, "$ne": 1.0}) == {"int1", "float25"}
    assert matching(store, {"$exists": True, "$nin": [None]}) == but("absent", "null")
    assert matching(store, {"$gt": 5, "$lt": 0}) == set()


def test_several_keys_all_apply_with_plain_values(store: FactStore) -> None:
    got = {f.id for f in store.list(metadata={"v": {"$gte": 1}, "i": {"$lt": 3}}, limit=50)}
    assert got == {"int1", "float1", "float25"}
    got = {f.id for f in store.list(metadata={"v": {"$exists": True}, "i": 2}, limit=50)}
    assert got == {"float25"}


def test_operators_combine_with_the_other_filters(store: FactStore) -> None:
    numbers = {"$gte": -10, "$lte": 10}
    got = store.list(tags=["even"], metadata={"v": numbers}, limit=50)
    assert {f.id for f in got} == {"int1", "float25"}
    got = store.search("apple", top_k=50, category="fruit/red", metadata={"v": numbers})
    assert {f.id for f in got} == {"int1", "neg"}
    assert store.search("apple", top_k=50, source="nope", metadata={"v": numbers}) == []


def test_list_without_query_is_newest_first_and_pages(store: FactStore) -> None:
    expr = {"v": {"$exists": True}}
    everything = [f.id for f in store.list(metadata=expr, limit=100)]
    assert everything == list(reversed(VALUES))
    assert [f.id for f in store.list(metadata=expr, limit=3, offset=2)] == everything[2:5]
    assert store.list(metadata=expr, limit=0) == []
    assert [f.id for f in store.list(metadata={"v": "b"})] == ["strb"]  # plain equality


def test_search_filters_before_ranking(make_store: Callable[[], FactStore]) -> None:
    """The best top_k of what passes, however many better facts fail the filter."""
    s = make_store()
    s.index_many(
        [Fact(id=f"strong{i}", content="kiwi kiwi kiwi", metadata={"n": i}) for i in range(30)]
        + [Fact(id="weak", content="kiwi and many other words here", metadata={"n": 100})]
    )
    assert [f.id for f in s.search("kiwi", top_k=1, metadata={"n": {"$gte": 50}})] == ["weak"]
    assert len(s.search("kiwi", top_k=5, metadata={"n": {"$lt": 50}})) == 5


def test_keys_are_literal(make_store: Callable[[], FactStore]) -> None:
    s = make_store()
    odd_keys = ["a.b", 'q"uote', "x$y", "$lit", "ключ", "k\x00ey", "[0]", "$", "a b"]
    s.index_many(Fact(id=f"f{i}", content="apple", metadata={k: i}) for i, k in enumerate(odd_keys))
    s.index(Fact(id="nested", content="apple", metadata={"a": {"b": 0}}))
    for i, key in enumerate(odd_keys):
        assert [f.id for f in s.list(metadata={key: {"$gte": i, "$lte": i}})] == [f"f{i}"], key
        assert [f.id for f in s.list(metadata={key: i})] == [f"f{i}"], key  # "$lit": a key
        assert len(s.list(metadata={key: {"$exists": False}}, limit=100)) == len(odd_keys)


def test_search_by_metadata_stays_literal(make_store: Callable[[], FactStore]) -> None:
    """search_by_metadata compares a value, even one that looks like an expression."""
    s = make_store()
    s.index(Fact(id="op", content="x", metadata={"k": {"$gt": 1}}))
    s.index(Fact(id="two", content="x", metadata={"k": 2}))
    assert [f.id for f in s.search_by_metadata("k", {"$gt": 1})] == ["op"]
    assert [f.id for f in s.list(metadata={"k": {"$gt": 1}})] == ["two"]
    assert [f.id for f in s.list(metadata={"k": {"$eq": {"$gt": 1}}})] == ["op"]


BAD = [
    ({"v": {"$regex": "a"}}, "$regex"),
    ({"v": {"$eq": 1, "$nope": 1}}, "$nope"),
    ({"v": {"$in": "abc"}}, "$in"),
    ({"v": {"$nin": {"a": 1}}}, "$nin"),
    ({"v": {"$in": 3}}, "$in"),
    ({"v": {"$exists": 1}}, "$exists"),
    ({"v": {"$exists": "yes"}}, "$exists"),
    ({"v": {"$exists": None}}, "$exists"),
    ({"v": {"$gt": 1, "plain": 2}}, "'v'"),
    ({"v": {"$gt": float("nan")}}, "metadata"),
    ({"v": {"$in": [float("inf")]}}, "metadata"),
    ({"v": {"$eq": object()}}, "metadata"),
    ({"v": {"$eq": "\ud800"}}, "metadata"),
]


@pytest.mark.parametrize(("metadata", "named"), BAD, ids=[b[1] + str(i) for i, b in enumerate(BAD)])
def test_bad_expressions_are_invalid_arguments(
    store: FactStore, metadata: dict[str, Any], named: str
) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        store.search("apple", metadata=metadata)
    assert named in str(caught.value)
    with pytest.raises(InvalidArgumentError) as caught:
        store.list(metadata=metadata)
    assert named in str(caught.value)


def test_bad_expression_names_the_key(store: FactStore) -> None:
    with pytest.raises(InvalidArgumentError, match=r"'colour'.*'\$like'"):
        store.list(metadata={"colour": {"$like": "re%"}})
