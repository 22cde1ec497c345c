"""Any text is a valid query (SPEC 6): in modes "any" and "all" search never raises, on
every store (SQLite, the twin, PostgreSQL) and they find the same facts; in raw mode the
only possible error is InvalidQueryError (FTS5's, or the refusal of more than
MAX_QUERY_TERMS words)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pgserver import new_agent_id

from sqlmem.config import StoreConfig
from sqlmem.errors import InvalidQueryError
from sqlmem.inmemory.facts import InMemoryFactStore
from sqlmem.protocols import FactStore
from sqlmem.records import Fact
from sqlmem.search.query import MAX_QUERY_TERMS
from sqlmem.sqlite.core.engine import Engine
from sqlmem.sqlite.stores.facts import SQLiteFactStore

CORPUS = [
    "what's up? e.g. C++ and foo-bar, a:b",
    "AND OR NOT NEAR dark side of the moon",
    "用户喜欢周日早上跑步",
    "我喜欢Python编程",
    "emoji 😀 and naïve café",
    'star * caret ^ quote " done',
]

OFFENDERS = [
    "what's up?",
    "e.g.",
    "C++",
    "foo-bar",
    "a:b",
    "AND",
    "OR dark",
    "NEAR(a b)",
    '"x',
    "*",
    "^",
    "😀",
    "👍🏽 dark",
    "   \t\n ",
    "",
    "x" * 10_000,
    "dark moon " * 1_000,
    " ".join(f"w{i}" for i in range(2_000)),
    "\x00",
    "a\ud800b",
    "跑步" * 100,
    "NOT",
    "-dark",
    "dark*",
    "{content}: dark",
    "content:dark",
    "(((",
    ")",
    "'",
    "\\",
    "%_",
]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, pg_backend: Any) -> Iterator[list[FactStore]]:
    engine = Engine(Path(tmp_path_factory.mktemp("safety")) / "facts.db", StoreConfig())
    sqlite_store = SQLiteFactStore(engine)
    memory_store = InMemoryFactStore()
    pg_db = pg_backend.open(new_agent_id())  # the PostgreSQL store (issue 21)
    facts = [Fact(id=f"f{i}", content=text) for i, text in enumerate(CORPUS)]
    for store in (sqlite_store, memory_store, pg_db.facts):
        store.index_many(facts)
    yield [sqlite_store, memory_store, pg_db.facts]
    engine.close()
    pg_db.close()


def assert_safe(stores: list[FactStore], query: str) -> None:
    for mode in ("any", "all"):
        found = [{f.id for f in store.search(query, top_k=50, mode=mode)} for store in stores]
        assert all(other == found[0] for other in found[1:]), (query, mode)
    try:
        stores[0].search(query, mode="raw")
    except InvalidQueryError as exc:
        if exc.__cause__ is None:  # not FTS5's refusal: the word limit (issue 23 item 6)
            assert "MAX_QUERY_TERMS" in str(exc) and len(query) > 2 * MAX_QUERY_TERMS, exc


@pytest.mark.parametrize("query", OFFENDERS, ids=lambda q: repr(q[:20]))
def test_offenders(stores: list[FactStore], query: str) -> None:
    assert_safe(stores, query)


@settings(max_examples=150, deadline=None)
@given(st.text() | st.text(st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010)))
def test_arbitrary_text(stores: list[FactStore], query: str) -> None:
    assert_safe(stores, query)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(OFFENDERS[:14] + CORPUS + ["dark", "moon", "跑"]), max_size=5))
def test_combinations(stores: list[FactStore], parts: list[str]) -> None:
    assert_safe(stores, " ".join(parts))
    assert_safe(stores, "".join(parts))


def test_expected_matches(stores: list[FactStore]) -> None:
    for store in stores:
        assert {f.id for f in store.search("C++")} == {"f0"}
        assert {f.id for f in store.search("跑步")} == {"f2"}
        assert {f.id for f in store.search("python")} == {"f3"}
        assert {f.id for f in store.search("cafe")} == {"f4"}  # diacritics removed
        assert {f.id for f in store.search("OR dark", mode="all")} == {"f1"}
