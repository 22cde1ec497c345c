"""Hostile metadata operator expressions (SPEC 6, 0.2; issue 15 "Bad input").

Any key (any plane, NUL, quotes, dots, `$` inside, lone surrogates), any operator name,
any argument (JSON or not, NaN, deep, huge): `search` and `list` on the SQLite store and
the twin either work, and agree, or raise `InvalidArgumentError` naming the metadata
filter; never an apsw error, a TypeError or a RecursionError. And a hostile key and value
that were stored are found exactly by `$eq`, `$in`, `$exists` and (numbers, strings) by
`$gte` + `$lte` on the same value.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem import Fact, InvalidArgumentError
from sqlmem.inmemory.facts import InMemoryFactStore
from sqlmem.protocols import FactStore

_NASTY = [
    "", " ", "'; DROP TABLE facts; --", '"', "a.b", "$.a", "a[0]", "\x00", "a\x00b", "\ud800",
    "🙂", "用户", "$", "$eq", "x$y", "\\", "'", "%", "*", "a" * 600,
]  # fmt: skip
_any_char = st.characters(codec=None, exclude_categories=())
hostile = st.one_of(st.sampled_from(_NASTY), st.text(_any_char, max_size=20))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | hostile,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile, inner, max_size=3),
    max_leaves=8,
)
ops = st.one_of(
    st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists"]),
    hostile.map(lambda s: "$" + s),
)
args = st.one_of(
    json_values,
    st.lists(json_values, max_size=3),
    st.sampled_from([math.nan, math.inf, b"bytes", {1, 2}, object(), (1, 2), 2**64]),
)
expressions = st.one_of(json_values, st.dictionaries(ops, args, min_size=1, max_size=3))


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FactStore, FactStore]]:
    db = sqlmem.open(tmp_path_factory.mktemp("hostile-ops") / "memory.db")
    twin = InMemoryFactStore()
    seeds = [
        Fact(id="n", content="apple", metadata={"k": 1, "a.b": "x", "$d": None}),
        Fact(id="s", content="apple", metadata={"k": "1", "nested": {"$gt": [1]}}),
    ]
    db.facts.index_many(seeds)
    twin.index_many(seeds)
    yield db.facts, twin
    db.close()


def _answers(store: FactStore, metadata: dict[str, Any]) -> tuple[set[str], set[str]] | str:
    try:
        listed = {f.id for f in store.list(metadata=metadata, limit=100)}
        found = {f.id for f in store.search("apple", top_k=100, metadata=metadata)}
    except InvalidArgumentError as exc:
        assert "metadata" in str(exc), exc
        return "refused"
    assert listed == found
    return listed, found


@settings(max_examples=300, deadline=None)
@given(metadata=st.dictionaries(hostile | st.sampled_from(["k", "a.b", "$d"]), expressions))
def test_any_expression_works_or_is_refused_alike(
    stores: tuple[FactStore, FactStore], metadata: dict[str, Any]
) -> None:
    sqlite, twin = stores
    assert _answers(sqlite, metadata) == _answers(twin, metadata)


@settings(max_examples=150, deadline=None)
@given(key=hostile, value=json_values)
def test_a_stored_hostile_key_and_value_are_found_exactly(
    stores: tuple[FactStore, FactStore], key: str, value: Any
) -> None:
    sqlite, twin = stores
    fact = Fact(id="probe", content="apple")
    fact.metadata = {key: value}  # past the record's own check: the store refuses surrogates
    try:
        sqlite.index(fact)
    except InvalidArgumentError:  # a lone surrogate: refused when written, nothing stored
        assert sqlite.get("probe") is None
        return
    twin.index(fact)
    try:
        expressions: list[Any] = [{"$eq": value}, {"$in": [value, "other"]}, {"$exists": True}]
        if isinstance(value, str) or (isinstance(value, (int, float)) and type(value) is not bool):
            expressions.append({"$gte": value, "$lte": value})
        for expr in expressions:
            for store in (sqlite, twin):
                got = {f.id for f in store.list(metadata={key: expr}, limit=100)}
                assert "probe" in got, (type(store).__name__, expr)
        for store in (sqlite, twin):
            got = {f.id for f in store.list(metadata={key: {"$ne": value}}, limit=100)}
            assert "probe" not in got
            assert got == {"n", "s"} - {
                f.id for f in store.list(metadata={key: {"$eq": value}}, limit=100)
            }
    finally:
        sqlite.delete("probe")
        twin.delete("probe")


def test_deep_arguments_are_refused_not_recursion_errors(
    stores: tuple[FactStore, FactStore],
) -> None:
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    for store in stores:
        for expr in ({"$eq": deep}, {"$in": [deep]}, {"$gt": deep}):
            with pytest.raises(InvalidArgumentError, match="metadata"):
                store.list(metadata={"k": expr})
