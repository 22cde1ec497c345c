"""Query plans of metadata operator filters (issue 15): a search or a list with a tag or a
category plus a metadata operator never scans the facts table, with or without ANALYZE
statistics; the operators are checked on the candidates the FTS index, the tag index or
the category index yields. And the rows are right."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sqlmem.config import StoreConfig
from sqlmem.records import Fact
from sqlmem.rules.encoding import dt_from_ms
from sqlmem.rules.filters import make_filters
from sqlmem.sqlite.core.engine import Engine
from sqlmem.sqlite.stores import facts_list_sql, facts_sql
from sqlmem.sqlite.stores.facts import SQLiteFactStore

N = 4000
OPERATORS: list[dict[str, Any]] = [
    {"k": {"$gte": 10, "$lt": 40}},
    {"k": {"$in": [3, 5, 7]}, "lang": {"$ne": "fr"}},
    {"missing": {"$exists": False}, "k": {"$nin": [1, 2]}},
    {"lang": {"$gt": "en"}},
    {"k": 3},
]
DRIVERS: list[dict[str, Any]] = [
    {"tags": ["t3"]},
    {"tags": ["t3", "u10"]},
    {"category": "cat3"},
    {"tags": ["t3"], "category": "cat3"},
]


@pytest.fixture(scope="module", params=[False, True], ids=["fresh", "analyzed"])
def big(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Engine, SQLiteFactStore]]:
    eng = Engine(tmp_path_factory.mktemp("meta-plans") / "facts.db", StoreConfig())
    store = SQLiteFactStore(eng)
    store.index_many(
        Fact(
            id=f"f{i}",
            content=f"w{i % 13} common words {i}",
            category=f"cat{i % 20}/sub{i % 3}",
            tags=[f"t{i % 7}", f"u{i % 50}"],
            metadata={"k": i % 100, "lang": ["en", "fr", "de"][i % 3]},
            created_at=dt_from_ms(1_700_000_000_000 + i * 1000),
        )
        for i in range(N)
    )
    if request.param:
        with eng.write() as conn:
            conn.execute("ANALYZE")
    yield eng, store
    eng.close()


def plan(engine: Engine, text: str, params: dict[str, Any]) -> list[str]:
    with engine.read() as conn:
        return [str(row[3]) for row in conn.execute("EXPLAIN QUERY PLAN " + text, params)]


def scans_facts(lines: list[str]) -> bool:
    return any(line == "SCAN f" or line.startswith("SCAN f ") for line in lines)


@pytest.mark.parametrize("driver", DRIVERS, ids=lambda d: "+".join(d))
@pytest.mark.parametrize("metadata", OPERATORS, ids=lambda m: ",".join(m))
def test_search_with_a_metadata_operator_is_fts_driven(
    big: tuple[Engine, SQLiteFactStore], driver: dict[str, Any], metadata: dict[str, Any]
) -> None:
    engine, store = big
    filters = make_filters(**driver, metadata=metadata)
    params = filters.params()
    params["query"], params["limit"], params["now"] = '"w3" OR "common"', 10, 0
    lines = plan(engine, facts_sql.search_sql(filters.key), params)
    assert lines[0].startswith("SCAN facts_fts VIRTUAL TABLE"), lines
    assert "SEARCH f USING INTEGER PRIMARY KEY (rowid=?)" in lines, lines
    assert not scans_facts(lines), lines
    got = store.search("w3 common", top_k=N, **driver, metadata=metadata)
    assert all(filters.accepts(f.tags, f.category, f.source, 0, f.metadata) for f in got)
    every = store.list(**driver, metadata=metadata, limit=N)
    assert {f.id for f in got} == {f.id for f in every}  # every fact holds "common"


@pytest.mark.parametrize("driver", DRIVERS, ids=lambda d: "+".join(d))
@pytest.mark.parametrize("metadata", OPERATORS, ids=lambda m: ",".join(m))
def test_list_with_a_metadata_operator_is_index_driven(
    big: tuple[Engine, SQLiteFactStore], driver: dict[str, Any], metadata: dict[str, Any]
) -> None:
    engine, store = big
    filters = make_filters(**driver, metadata=metadata)
    params = filters.params()
    params["limit"], params["offset"], params["now"] = 20, 0, 0
    lines = plan(engine, facts_list_sql.list_sql(filters.key), params)
    assert not scans_facts(lines), lines
    if "tags" in driver:
        assert lines[0] == "SEARCH d USING PRIMARY KEY (tag=?)", lines
        assert "SEARCH f USING INTEGER PRIMARY KEY (rowid=?)" in lines, lines
    else:
        assert any("USING INDEX facts_category (category=?)" in line for line in lines), lines
    # newest first, exactly the facts that pass (checked against the Python predicate)
    expected = [
        f"f{i}"
        for i in range(N - 1, -1, -1)
        if filters.accepts(
            [f"t{i % 7}", f"u{i % 50}"],
            f"cat{i % 20}/sub{i % 3}",
            "",
            0,
            {"k": i % 100, "lang": ["en", "fr", "de"][i % 3]},
        )
    ]
    assert [f.id for f in store.list(**driver, metadata=metadata, limit=N)] == expected
    if driver.get("tags") != ["t3", "u10"]:  # the narrowest driver may select nothing
        assert expected  # not vacuous
    assert [f.id for f in store.list(**driver, metadata=metadata, limit=5, offset=3)] == (
        expected[3:8]
    )


@pytest.mark.parametrize("driver", [*DRIVERS, {"source": "s"}, {"since": dt_from_ms(0)}])
def test_filtered_search_binds_nothing_the_planner_weighs(driver: dict[str, Any]) -> None:
    """A bare `LIMIT :limit`, or an indexed column of facts compared with a bound value,
    in the FTS-driven search made SQLite prepare the statement again at every call:
    ~100 us with a metadata filter's long SQL (W3m was 3.6x raw, ~1x without). The limit
    is an expression (`+:limit`) and the row tests use `+f.column`; the plan does not
    change (the tests above: FTS drives, facts rows by primary key)."""
    text = facts_sql.search_sql(make_filters(**driver, metadata={"k": {"$gt": 1}}).key)
    assert text.endswith(" LIMIT +:limit"), text
    for column in ("category", "source", "created_at"):
        assert f"f.{column} " not in text.replace(f"+f.{column} ", ""), text
