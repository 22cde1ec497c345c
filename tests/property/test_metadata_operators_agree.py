"""Random metadata operator expressions over random JSON metadata (SPEC 6, 0.2): the
SQLite store, the in-memory twin and a plain-Python reference written here from the SPEC
(independent of `sqlmem.rules.metadata`) select exactly the same facts, through `list`
and through a filtered `search`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlmem.config import StoreConfig
from sqlmem.errors import InvalidArgumentError
from sqlmem.inmemory.facts import InMemoryFactStore
from sqlmem.records import Fact
from sqlmem.sqlite.core.engine import Engine
from sqlmem.sqlite.stores.facts import SQLiteFactStore

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
KEYS = ["a", "b.c", "$d", "é", "k\x00", 'q"']
OPS = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists"]

texts = st.lists(st.sampled_from(["", "a", "b", "é", "😀", "\x00", "A", "1"]), max_size=3).map(
    "".join
)
numbers = st.one_of(
    st.integers(-3, 3),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.0, 1e18, 9.3e18, 2.0**63]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=5,
)


def operator_expression() -> st.SearchStrategy[dict[str, Any]]:
    def arg(op: str) -> st.SearchStrategy[Any]:
        if op in ("$in", "$nin"):
            return st.lists(values, max_size=4)
        if op == "$exists":
            return st.booleans()
        if op in ("$eq", "$ne"):
            return values
        return st.one_of(numbers, texts, scalars)  # mostly comparable, sometimes not

    return st.lists(st.sampled_from(OPS), min_size=1, max_size=3, unique=True).flatmap(
        lambda ops: st.fixed_dictionaries({op: arg(op) for op in ops})
    )


filters = st.dictionaries(
    st.sampled_from(KEYS), st.one_of(operator_expression(), values), min_size=1, max_size=3
)
metadatas = st.dictionaries(st.sampled_from(KEYS), values, max_size=4)


# -- the reference, straight from the SPEC ---------------------------------------------------


def equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):  # true, 1, 1.0 and "1" are four values
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return set(a) == set(b) and all(equal(a[k], b[k]) for k in a)
    return bool(a == b)


def number(x: Any) -> bool:
    return type(x) in (int, float)


def ordered(have: Any, arg: Any) -> bool:
    return (number(have) and number(arg)) or (type(have) is str and type(arg) is str)


def holds(metadata: dict[str, Any], key: str, expr: Any) -> bool:
    is_expr = isinstance(expr, dict) and expr and all(k.startswith("$") for k in expr)
    if not is_expr:
        return key in metadata and equal(metadata[key], expr)
    present = key in metadata
    have = metadata.get(key)
    for op, arg in expr.items():
        if op == "$eq":
            ok = present and equal(have, arg)
        elif op == "$ne":
            ok = not present or not equal(have, arg)
        elif op == "$in":
            ok = present and any(equal(have, v) for v in arg)
        elif op == "$nin":
            ok = not present or not any(equal(have, v) for v in arg)
        elif op == "$exists":
            ok = present == arg
        else:
            ok = present and ordered(have, arg)
            if ok:
                ok = {
                    "$gt": have > arg, "$gte": have >= arg, "$lt": have < arg, "$lte": have <= arg,
                }[op]  # fmt: skip
        if not ok:
            return False
    return True


def refused(wanted: dict[str, Any]) -> str:
    """What the SPEC refuses in this filter (a pattern of the message), or ""."""
    for expr in wanted.values():
        if not isinstance(expr, dict):
            continue
        dollars = sum(k.startswith("$") for k in expr)
        if 0 < dollars < len(expr):
            return "mixes operators"
        if dollars and any(k not in OPS for k in expr):
            return "unknown operator"
    return ""


# -- the stores ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteFactStore]:
    engine = Engine(tmp_path_factory.mktemp("ops") / "facts.db", StoreConfig())
    yield SQLiteFactStore(engine)
    engine.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(metas=st.lists(metadatas, min_size=1, max_size=12), wanted=filters)
def test_sqlite_twin_and_reference_select_the_same_facts(
    sqlite_store: SQLiteFactStore, metas: list[dict[str, Any]], wanted: dict[str, Any]
) -> None:
    facts = [
        Fact(
            id=f"f{i}",
            content=f"word {i}",
            tags=["even" if i % 2 == 0 else "odd", "all"],
            metadata=m,
            created_at=T0 + timedelta(seconds=i),
        )
        for i, m in enumerate(metas)
    ]
    twin = InMemoryFactStore()
    sqlite_store.delete_many([f.id for f in sqlite_store.list(limit=1000)])
    sqlite_store.index_many(facts)
    twin.index_many(facts)
    refusal = refused(wanted)
    if refusal:  # refused alike by both
        for store in (sqlite_store, twin):
            with pytest.raises(InvalidArgumentError, match=refusal):
                store.list(metadata=wanted)
        return
    expected = {
        f"f{i}" for i, m in enumerate(metas) if all(holds(m, k, e) for k, e in wanted.items())
    }
    for store in (sqlite_store, twin):
        listed = {f.id for f in store.list(metadata=wanted, limit=1000)}
        found = {f.id for f in store.search("word", top_k=1000, metadata=wanted)}
        assert listed == expected, (type(store).__name__, listed, expected)
        assert found == expected, (type(store).__name__, found, expected)
        # with a tag too: a list is then driven by the tag's rows (facts_sql.list_sql)
        tagged = {f"f{i}" for i in range(len(metas)) if i % 2 == 0}
        got = [f.id for f in store.list(tags=["even"], metadata=wanted, limit=1000)]
        assert got == sorted(expected & tagged, key=lambda i: -int(i[1:]))  # newest first
        found = {f.id for f in store.search("word", 1000, tags=["even"], metadata=wanted)}
        assert found == expected & tagged
