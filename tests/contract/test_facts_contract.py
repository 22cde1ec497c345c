"""The FactStore contract: one suite, every backend.

Every test runs against the SQLite store (a fresh file), the in-memory twin and the
PostgreSQL store (a fresh agent on the session's server). The one behaviour only SQLite has,
raw FTS5 syntax, is checked on the others too: they refuse it (`test_raw_mode`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from sqlmem.config import StoreConfig
from sqlmem.errors import (
    FactNotFoundError,
    InvalidArgumentError,
    InvalidQueryError,
    SqlmemError,
)
from sqlmem.inmemory.facts import InMemoryFactStore
from sqlmem.protocols import FactStore
from sqlmem.records import Fact
from sqlmem.sqlite.core.engine import Engine
from sqlmem.sqlite.stores.facts import SQLiteFactStore

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[], FactStore]]:
    engines: list[Engine] = []

    def make() -> FactStore:
        if kind == "memory":
            return InMemoryFactStore()
        if kind == "postgres":  # a fresh agent of the session's server
            return request.getfixturevalue("open_pg")().facts  # type: ignore[no-any-return]
        engine = Engine(tmp_path / f"facts-{len(engines)}.db", StoreConfig())
        engines.append(engine)
        return SQLiteFactStore(engine)

    yield make
    for engine in engines:
        engine.close()


@pytest.fixture
def store(make_store: Callable[[], FactStore]) -> FactStore:
    return make_store()


def ids(facts: list[Fact]) -> list[str]:
    return [f.id for f in facts]


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


# -- records ------------------------------------------------------------------------------


def test_implements_protocol(store: FactStore) -> None:
    assert isinstance(store, FactStore)


def test_round_trip_keeps_everything(store: FactStore) -> None:
    fact = Fact(
        id="f1",
        content="emoji 😀, astral 𝔘𝔫𝔦, NUL \x00 inside\nand a newline",
        source="chat:1",
        tags=["b", "a", "b"],
        category="project/sqlmem",
        metadata={"big": 2**63 - 1, "neg": -(2**63), "nested": {"x": [1, {"y": None}]}, "": ""},
        created_at=at(0),
        updated_at=at(1),
    )
    assert store.index(fact) == "f1"
    got = store.get("f1")
    assert got is not None
    assert got == fact
    assert got.created_at is not None and got.created_at.tzinfo is not None
    assert store.get("missing") is None


def test_generated_id_and_timestamps(store: FactStore) -> None:
    before = datetime.now(timezone.utc) - timedelta(seconds=1)
    new_id = store.index(Fact(content="no id given"))
    got = store.get(new_id)
    assert got is not None and got.id == new_id and new_id
    assert got.created_at is not None and got.created_at >= before
    assert got.updated_at == got.created_at


def test_update_keeps_created_at_unless_given(store: FactStore) -> None:
    store.index(Fact(id="f", content="first", created_at=at(0), updated_at=at(0)))
    store.index(Fact(id="f", content="second"))
    got = store.get("f")
    assert got is not None and got.content == "second"
    assert got.created_at == at(0)
    assert got.updated_at is not None and got.updated_at > at(0)
    store.index(Fact(id="f", content="third", created_at=at(5), updated_at=at(6)))
    got = store.get("f")
    assert got is not None and (got.created_at, got.updated_at) == (at(5), at(6))
    assert len(store) == 1


def test_only_facts_are_accepted(store: FactStore) -> None:
    with pytest.raises(InvalidArgumentError):
        store.index({"content": "a dict"})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        store.index_many([Fact(content="ok"), "text"])  # type: ignore[list-item]
    assert len(store) == 0


def test_mutated_invalid_fact_is_refused_and_nothing_stored(store: FactStore) -> None:
    bad = Fact(id="bad", content="fine")
    bad.content = "lone \ud800 surrogate"
    with pytest.raises(InvalidArgumentError):
        store.index(bad)
    empty = Fact(id="empty", content="fine")
    empty.content = "  "
    with pytest.raises(InvalidArgumentError):
        store.index_many([Fact(id="good", content="good"), empty])
    long_id = Fact(id="x" * 513, content="too long an id")
    with pytest.raises(InvalidArgumentError):
        store.index(long_id)
    assert len(store) == 0 and store.get("good") is None


def test_index_many_is_all_or_nothing_and_last_duplicate_wins(store: FactStore) -> None:
    out = store.index_many(
        [
            Fact(id="a", content="alpha one", created_at=at(1)),
            Fact(id="b", content="beta"),
            Fact(id="a", content="alpha two", tags=["t"]),
        ]
    )
    assert out == ["a", "b", "a"]
    assert len(store) == 2
    a = store.get("a")
    assert a is not None and a.content == "alpha two" and a.tags == ["t"]
    assert a.created_at == at(1)  # as if the two rows had been indexed one after the other
    assert ids(store.search("one")) == []
    assert ids(store.search("two")) == ["a"]
    assert store.index_many([]) == []


def test_index_many_large_batch(store: FactStore) -> None:
    facts = [
        Fact(
            id=f"f{i}", content=f"fact number {i} word{i % 7}", created_at=at(i) if i % 3 else None
        )
        for i in range(1200)
    ]
    store.index_many(facts)
    assert len(store) == 1200
    assert len(store.search("word3", top_k=1000)) == len([i for i in range(1200) if i % 7 == 3])
    got = store.get("f7")
    assert got is not None and got.created_at == at(7)


def test_delete(store: FactStore) -> None:
    store.index(Fact(id="f1", content="to be removed"))
    store.delete("f1")
    assert store.get("f1") is None and len(store) == 0
    assert store.search("removed") == []
    with pytest.raises(FactNotFoundError):
        store.delete("f1")
    with pytest.raises(KeyError):  # FactNotFoundError is a KeyError too
        store.delete("never")


def test_delete_many(store: FactStore) -> None:
    store.index_many([Fact(id=f"f{i}", content=f"fact {i}") for i in range(5)])
    assert store.delete_many(["f0", "f1", "unknown", "f1", ""]) == 2
    assert store.delete_many([]) == 0
    assert store.count() == len(store) == 3


# -- search ---------------------------------------------------------------------------------


def test_any_and_all(store: FactStore) -> None:
    store.index_many(
        [
            Fact(id="both", content="the dark side of the moon"),
            Fact(id="dark", content="a dark and stormy night"),
            Fact(id="moon", content="the moon landing"),
        ]
    )
    assert set(ids(store.search("dark moon"))) == {"both", "dark", "moon"}
    assert ids(store.search("dark moon", mode="all")) == ["both"]
    assert ids(store.search("dark moon"))[0] == "both"  # more words rank first
    assert ids(store.search("zebra")) == []


def test_bm25_order_and_scores(store: FactStore) -> None:
    store.index_many(
        [Fact(id=f"common{i}", content=f"cats are common here {i}") for i in range(6)]
        + [Fact(id="rare", content="cats and a platypus")]
    )
    found = store.search("cats platypus", top_k=3)
    assert found[0].id == "rare"  # the rarer word weighs more
    scores = [f.score for f in found]
    assert all(s is not None for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert len(found) == 3


def test_top_k(store: FactStore) -> None:
    store.index_many([Fact(id=f"f{i}", content=f"apple {i}") for i in range(20)])
    assert len(store.search("apple")) == 10
    assert len(store.search("apple", top_k=3)) == 3
    assert store.search("apple", top_k=0) == []
    assert store.search("apple", top_k=-5) == []
    assert len(store.search("apple", top_k=10**30)) == 20


def test_stemming_and_case(store: FactStore) -> None:
    store.index(Fact(id="f", content="She was Running daily"))
    assert ids(store.search("run")) == ["f"]
    assert ids(store.search("RUNS")) == ["f"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [("跑步", {"zh"}), ("跑", {"zh"}), ("早上跑步", {"zh"}), ("步跑", set()), ("python", {"mix"})],
)
def test_scripts_without_spaces(store: FactStore, query: str, expected: set[str]) -> None:
    store.index_many(
        [
            Fact(id="zh", content="用户喜欢周日早上跑步"),
            Fact(id="mix", content="我喜欢Python编程"),
            Fact(id="en", content="the user likes running"),
        ]
    )
    assert set(ids(store.search(query))) == expected


@pytest.mark.parametrize(
    "query",
    ["", "   \n\t", "?!", "*", "^", '"', "😀", "-", ":", "()", "\ud800", "_"],
)
def test_queries_without_words_return_nothing(store: FactStore, query: str) -> None:
    store.index(Fact(id="f", content="and or not near _ - : ( ) * ^ 😀"))
    assert store.search(query) == []
    assert store.search(query, mode="all") == []


def test_operators_are_words(store: FactStore) -> None:
    store.index_many(
        [Fact(id="ops", content="near and or not"), Fact(id="c", content="I write C++ code")]
    )
    assert ids(store.search("NEAR(a b)")) == ["ops"]
    assert ids(store.search("AND OR", mode="all")) == ["ops"]
    assert ids(store.search("C++")) == ["c"]
    assert ids(store.search("what's c")) == ["c"]
    assert ids(store.search('"code')) == ["c"]


def test_invalid_arguments(store: FactStore) -> None:
    bad_calls: list[Callable[[], object]] = [
        lambda: store.search("x", mode="fuzzy"),  # type: ignore[arg-type]
        lambda: store.search(None),  # type: ignore[arg-type]
        lambda: store.search("x", top_k="3"),  # type: ignore[arg-type]
        lambda: store.search("x", category="../etc"),
        lambda: store.search("x", category="/root"),
        lambda: store.search("x", category="a//b"),
        lambda: store.search("x", tags="single"),
        lambda: store.search("x", tags=[1]),  # type: ignore[list-item]
        lambda: store.search("x", metadata=[("a", 1)]),  # type: ignore[arg-type]
        lambda: store.search("x", metadata={1: 1}),  # type: ignore[dict-item]
        lambda: store.search("x", metadata={"a": object()}),
        lambda: store.search("x", since="2024-01-01"),  # type: ignore[arg-type]
        lambda: store.search("x", source=3),  # type: ignore[arg-type]
        lambda: store.list(offset=-1),
        lambda: store.list(category="a/../b"),
        lambda: store.get(3),  # type: ignore[arg-type]
        lambda: store.search_by_metadata(1, 1),  # type: ignore[arg-type]
    ]
    for call in bad_calls:
        with pytest.raises(InvalidArgumentError):
            call()


# -- filters ----------------------------------------------------------------------------


@pytest.fixture
def filtered(store: FactStore) -> FactStore:
    """Strong non-matching facts (many query words) and weak matching ones (one word)."""
    strong = [
        Fact(
            id=f"strong{i}",
            content="apple apple banana cherry apple",
            tags=["fruit"],
            category="food",
            source="web",
            metadata={"flag": 1, "lang": "en"},
            created_at=at(100 + i),
        )
        for i in range(30)
    ]
    weak = [
        Fact(
            id="weak-tag",
            content="an apple a day, and many other words to dilute it",
            tags=["health", "fruit"],
            created_at=at(1),
        ),
        Fact(
            id="weak-cat",
            content="apple pie recipe with lots of other words around",
            category="food/dessert",
            created_at=at(2),
        ),
        Fact(
            id="weak-src",
            content="apple stock went up, said the long news article",
            source="news",
            metadata={"flag": True, "a.b": "dotted"},
            created_at=at(3),
        ),
        Fact(
            id="weak-meta",
            content="apple orchard visit with family and friends today",
            metadata={"flag": "1", "nested": {"k": [1, 2], "j": None}},
            created_at=at(4),
        ),
    ]
    store.index_many(strong + weak)
    return store


def test_filters_narrow_before_ranking(filtered: FactStore) -> None:
    s = filtered
    assert ids(s.search("apple banana", top_k=3, tags=["health"])) == ["weak-tag"]
    assert ids(s.search("apple banana", top_k=3, tags=["fruit", "health"])) == ["weak-tag"]
    assert ids(s.search("apple banana", top_k=3, tags=["fruit", "nope"])) == []
    assert ids(s.search("apple banana", top_k=3, category="food/dessert")) == ["weak-cat"]
    assert ids(s.search("apple banana", top_k=3, source="news")) == ["weak-src"]
    assert set(ids(s.search("apple", top_k=3, until=at(2)))) == {"weak-tag", "weak-cat"}
    assert set(ids(s.search("apple", top_k=5, since=at(2), until=at(3)))) == {
        "weak-cat",
        "weak-src",
    }
    assert len(s.search("apple", top_k=100, since=at(100))) == 30
    assert ids(s.search("apple", top_k=100, source="")) != []


def test_category_is_path_or_below(filtered: FactStore) -> None:
    s = filtered
    s.index_many(
        [
            Fact(id="prefix-only", content="apple words", category="foodie"),
            Fact(id="deep", content="apple words", category="food/dessert/cake"),
            Fact(id="sibling", content="apple words", category="food-x/y"),
        ]
    )
    found = set(ids(s.search("apple", top_k=100, category="food")))
    assert "prefix-only" not in found and "sibling" not in found
    assert {"deep", "weak-cat", "strong0"} <= found
    assert set(ids(s.search("apple", top_k=100, category="food/dessert"))) == {"deep", "weak-cat"}
    assert len(s.search("apple", top_k=100, category="")) == len(s)  # "" is the root


def test_metadata_values_are_typed(filtered: FactStore) -> None:
    s = filtered
    assert ids(s.search("apple", top_k=3, metadata={"flag": True})) == ["weak-src"]
    assert ids(s.search("apple", top_k=3, metadata={"flag": "1"})) == ["weak-meta"]
    assert len(s.search("apple", top_k=100, metadata={"flag": 1})) == 30
    assert s.search("apple", metadata={"flag": 1.0}) == []
    assert ids(s.search("apple", metadata={"a.b": "dotted"})) == ["weak-src"]
    assert s.search("apple", metadata={"a": {"b": "dotted"}}) == []
    nested = {"nested": {"j": None, "k": [1, 2]}}  # key order does not matter
    assert ids(s.search("apple", metadata=nested)) == ["weak-meta"]
    assert s.search("apple", metadata={"nested": {"k": [2, 1], "j": None}}) == []
    assert s.search("apple", metadata={"nested": {"k": [1, 2]}}) == []
    assert s.search("apple", metadata={"missing": None}) == []
    both = ids(s.search("apple", top_k=3, metadata={"flag": 1, "lang": "en"}))
    assert len(both) == 3 and all(i.startswith("strong") for i in both)


def test_search_by_metadata(filtered: FactStore) -> None:
    s = filtered
    assert ids(s.search_by_metadata("flag", True)) == ["weak-src"]
    assert ids(s.search_by_metadata("flag", "1")) == ["weak-meta"]
    by_int = ids(s.search_by_metadata("flag", 1))
    assert by_int == [f"strong{i}" for i in range(30)]  # oldest first
    assert s.search_by_metadata("flag", False) == []
    assert ids(s.search_by_metadata("a.b", "dotted")) == ["weak-src"]
    assert ids(s.search_by_metadata("nested", {"k": [1, 2], "j": None})) == ["weak-meta"]


def test_search_by_metadata_with_a_limit_is_newest_first_and_bounded(
    filtered: FactStore,
) -> None:
    s = filtered
    assert ids(s.search_by_metadata("flag", 1, limit=3)) == ["strong29", "strong28", "strong27"]
    assert ids(s.search_by_metadata("flag", 1, limit=1000)) == [
        f"strong{i}" for i in reversed(range(30))
    ]
    assert ids(s.search_by_metadata("flag", True, limit=5)) == ["weak-src"]
    assert s.search_by_metadata("flag", 1, limit=0) == []
    assert s.search_by_metadata("flag", 1, limit=-4) == []
    assert s.search_by_metadata("flag", False, limit=10) == []
    # Without a limit: every match, oldest first, as before.
    assert ids(s.search_by_metadata("flag", 1, limit=None)) == [f"strong{i}" for i in range(30)]
    for bad in (True, 2.5, "3"):
        with pytest.raises(InvalidArgumentError):
            s.search_by_metadata("flag", 1, limit=bad)  # type: ignore[arg-type]


def test_list(filtered: FactStore) -> None:
    s = filtered
    newest = ids(s.list(limit=3))
    assert newest == ["strong29", "strong28", "strong27"]
    assert ids(s.list(limit=2, offset=1)) == ["strong28", "strong27"]
    assert len(s.list(limit=1000)) == 34
    assert ids(s.list(tags=["health"])) == ["weak-tag"]
    assert ids(s.list(category="food/dessert")) == ["weak-cat"]
    assert ids(s.list(source="news")) == ["weak-src"]
    assert ids(s.list(until=at(2))) == ["weak-cat", "weak-tag"]
    assert ids(s.list(since=at(2), until=at(3))) == ["weak-src", "weak-cat"]
    assert s.list(limit=0) == []


def test_list_sub_millisecond_bounds(store: FactStore) -> None:
    store.index(Fact(id="f", content="x", created_at=at(0)))
    assert ids(store.list(since=at(0) + timedelta(microseconds=1))) == []
    assert ids(store.list(until=at(0) + timedelta(microseconds=999))) == ["f"]
    naive = at(0).replace(tzinfo=None)
    assert ids(store.list(since=naive, until=naive)) == ["f"]


def test_tags_and_categories(filtered: FactStore) -> None:
    s = filtered
    assert s.tags() == {"fruit": 31, "health": 1}
    assert s.categories() == ["food", "food/dessert"]
    s.delete("weak-tag")
    s.index(Fact(id="strong0", content="retagged", tags=["new", "new"], category="z"))
    assert s.tags() == {"fruit": 29, "new": 1}
    assert s.categories() == ["food", "food/dessert", "z"]


# -- consistency ------------------------------------------------------------------------


def test_ghost_match_after_update_delete_and_reuse(store: FactStore) -> None:
    """Regression: old words must never match again (upsert, delete, rowid reuse)."""
    store.index(Fact(id="f1", content="original"))
    store.index(Fact(id="f1", content="updated"))
    assert store.search("original") == []
    store.delete("f1")
    store.index(Fact(id="f9", content="unrelated"))
    assert store.search("original") == []
    assert store.search("updated") == []
    assert ids(store.search("unrelated")) == ["f9"]


def test_threads(store: FactStore) -> None:
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(20):
                store.index(Fact(id=f"t{n}-{i}", content=f"thread {n} item {i}"))
                store.search(f"thread {n}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store) == 80
    assert len(store.search("thread", top_k=100)) == 80


# -- raw mode ---------------------------------------------------------------------------


def test_raw_mode(store: FactStore, kind: str) -> None:
    store.index_many([Fact(id="a", content="dark lighting"), Fact(id="b", content="dark matter")])
    if kind in ("memory", "postgres"):  # FTS5 syntax is SQLite's own
        with pytest.raises(InvalidArgumentError):
            store.search("dark", mode="raw")
        return
    assert set(ids(store.search('"dark" AND light*', mode="raw"))) == {"a"}
    assert set(ids(store.search("dark NOT matter", mode="raw"))) == {"a"}
    assert store.search("   ", mode="raw") == []
    for bad in ['"x', "a:b", "NEAR(a b", "*", "AND", "(dark", "dark OR"]:
        with pytest.raises(InvalidQueryError) as info:
            store.search(bad, mode="raw")
        assert isinstance(info.value, SqlmemError)
        assert info.value.__cause__ is not None
