"""Filters given empty (`tags=[]`, `metadata={}`, `category=""`) are no filters.

Regression (issue 14): SQLiteFactStore.search chose its unfiltered paths by identity with
`NO_FILTERS`, which `make_filters` returns only when every argument is None, so
`search(q, tags=[])` skipped mode "any"'s shortcut on large stores and ran the exact OR
query: same results, several times the cost. Emptiness is now decided by value
(`Filters.empty`); the statement trace shows both spellings run the same statements.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

import sqlmem
from sqlmem import Fact
from sqlmem.rules.filters import NO_FILTERS, make_filters
from sqlmem.sqlite.stores import facts_sql, fts_any

EMPTY_SPELLINGS: list[dict[str, Any]] = [
    {"tags": []},
    {"tags": ()},
    {"metadata": {}},
    {"category": ""},
    {"tags": [], "metadata": {}, "category": ""},
]


@pytest.mark.parametrize("kwargs", EMPTY_SPELLINGS)
def test_empty_filters_are_empty(kwargs: dict[str, Any]) -> None:
    filters = make_filters(**kwargs)
    assert filters.empty and filters.key == NO_FILTERS.key and filters.params() == {}


@pytest.mark.parametrize("kwargs", [{"tags": ["a"]}, {"source": ""}, {"metadata": {"k": 1}}])
def test_a_real_filter_is_not_empty(kwargs: dict[str, Any]) -> None:
    assert not make_filters(**kwargs).empty


@pytest.fixture
def traced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, list[Any]]]:
    """A store "large" for the shortcut (threshold lowered), and the (sql, bindings) of
    every statement its connections run."""
    monkeypatch.setattr(fts_any, "EXACT_BELOW", 1000)
    monkeypatch.setattr(fts_any, "RARE_SHARE", 0.01)  # 'zebra' (8 of 1,500) is rare
    seen: list[Any] = []

    def hook(conn: apsw.Connection) -> None:
        conn.exec_trace = lambda cursor, sql, bindings: seen.append((sql, bindings)) or True

    apsw.connection_hooks.append(hook)
    try:
        db = sqlmem.open(tmp_path / "memory.db")
        try:
            rng = random.Random(3)
            filler = [f"w{i}" for i in range(300)]
            db.facts.index_many(
                Fact(
                    id=f"f{i}",
                    content=" ".join(
                        rng.choices(filler, k=8) + ["the"] * (i % 2) + ["zebra"] * (i % 200 == 0)
                    ),
                )
                for i in range(1500)
            )
            yield db.facts, seen
        finally:
            db.close()
    finally:
        apsw.connection_hooks.remove(hook)


@pytest.mark.parametrize("kwargs", EMPTY_SPELLINGS)
def test_empty_filters_take_the_unfiltered_path(
    traced: tuple[Any, list[Any]], kwargs: dict[str, Any]
) -> None:
    facts, seen = traced
    facts.search("the zebra", 5)  # the shortcut reads the vocabulary once: not traced below

    def statements(**given: Any) -> tuple[list[Any], list[str]]:
        start = len(seen)
        found = facts.search("the zebra", 5, **given)
        return seen[start:], [f.id for f in found]

    plain = statements(tags=None)
    # the shortcut ran: it read the index's size (with the hidden-facts probe)
    assert (facts_sql.ANY_HIDDEN_AND_AVERAGES, None) in plain[0]
    assert not any(b and b.get("query") == '"the" OR "zebra"' for _, b in plain[0])  # no exact OR
    assert statements(**kwargs) == plain
