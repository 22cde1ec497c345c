"""The SQLite fact store's one-statement pack candidates (`layered_search`, used by
`build_memory_pack`) give exactly what the protocol path gives: one `search(layer=...)`
per layer, or the layer's newest facts with an empty query.

The corpora are small on purpose: few words (many matches, many bm25 ties), small top_k
(the statement's sorter keeps `2 * sum(wants)` rows, so layers rare among the matches
take the per-layer fallback), expired and low-confidence facts, old and new ones."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem import Fact, InvalidArgumentError
from sqlmem.context import MemoryPack, PackConfig, build_memory_pack
from sqlmem.rules.rows import facts_from_rows
from sqlmem.sqlite.stores.facts import SQLiteFactStore

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
LAYERS = ("semantic", "procedural", "episodic")
WORDS = ("tea", "green", "coffee", "user", "likes", "deploy", "make", "the")


class ProtocolOnly:
    """The store seen through the FactStore protocol only: no `layered_search`, so the
    pack takes its generic path (one search per layer)."""

    def __init__(self, store: SQLiteFactStore) -> None:
        self._store = store

    def search(self, *args: Any, **kwargs: Any) -> list[Fact]:
        return self._store.search(*args, **kwargs)

    def list(self, **kwargs: Any) -> list[Fact]:
        return self._store.list(**kwargs)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlmem.MemoryDB]:
    with sqlmem.open(tmp_path / "memory.db") as opened:
        yield opened


def _summary(pack: MemoryPack) -> tuple[Any, ...]:
    items = [(i.fact, i.layer, i.score, i.relevance, i.recency) for i in pack.items]
    return items, pack.text, pack.tokens, pack.diagnostics


def _same_packs(store: SQLiteFactStore, query: str, config: PackConfig) -> MemoryPack:
    fast = build_memory_pack(store, query, config, now=NOW)
    slow = build_memory_pack(ProtocolOnly(store), query, config, now=NOW)  # type: ignore[arg-type]
    assert _summary(fast) == _summary(slow)
    return fast


facts_strategy = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS[:4]), min_size=1, max_size=2),
        st.sampled_from(LAYERS),
        st.sampled_from([0.0, 0.3, 0.5, 1.0]),  # confidence
        st.integers(0, 3),  # age in days (0: no expiry; 3: expired yesterday)
    ),
    min_size=10,
    max_size=80,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=facts_strategy,
    query=st.sampled_from(["tea", "green tea", "coffee user", "the", "", "  ", "nothing", "?!"]),
    top_k=st.fixed_dictionaries({layer: st.integers(0, 2) for layer in LAYERS}),
    min_confidence=st.sampled_from([0.0, 0.5]),
)
def test_the_fast_path_is_the_protocol_path(
    rows: list[tuple[list[str], str, float, int]],
    query: str,
    top_k: dict[str, int],
    min_confidence: float,
) -> None:
    now = datetime.now(timezone.utc)
    with tempfile.TemporaryDirectory() as folder, sqlmem.open(Path(folder) / "m.db") as db:
        facts = []
        for n, (words, layer, confidence, age) in enumerate(rows):
            when = now - timedelta(days=age)
            facts.append(
                Fact(
                    id=f"f{n}",
                    content=" ".join(words),  # repeated texts: equal scores
                    layer=layer,
                    confidence=confidence,
                    salience=(n % 7) / 7,  # which of equal-scoring candidates is kept matters
                    created_at=when,
                    updated_at=when,
                    expires_at=now - timedelta(days=1) if age == 3 else None,
                )
            )
        db.facts.index_many(facts)
        config = PackConfig(top_k=top_k, min_confidence=min_confidence)  # type: ignore[arg-type]
        _same_packs(db.facts, query, config)  # type: ignore[arg-type]


def test_layered_search_is_one_search_per_layer(db: sqlmem.MemoryDB) -> None:
    db.facts.index_many(
        Fact(id=f"f{n:03}", content=f"tea {'green ' * (n % 4)}note {n}", layer=LAYERS[n % 3])
        for n in range(300)
    )
    store: SQLiteFactStore = db.facts  # type: ignore[assignment]
    wants = {"semantic": 5, "procedural": 40, "episodic": 0}
    got = store.layered_search("green tea", wants)
    assert set(got) == set(wants) and got["episodic"] == []
    for layer in ("semantic", "procedural"):
        expected = store.search("green tea", wants[layer], layer=layer, min_confidence=0.0)
        assert facts_from_rows(got[layer], ranked=True) == expected


def test_a_layer_rare_among_the_matches_still_gets_its_best(db: sqlmem.MemoryDB) -> None:
    # 200 semantic matches rank above the 3 procedural ones: the sorter's 2 * 8 best rows
    # hold none of them, and the per-layer search finds them.
    db.facts.index_many(Fact(content=f"tea tea tea {n}", layer="semantic") for n in range(200))
    db.facts.index_many(
        Fact(content=f"tea and many other words {n}", layer="procedural") for n in range(3)
    )
    store: SQLiteFactStore = db.facts  # type: ignore[assignment]
    got = store.layered_search("tea", {"semantic": 4, "procedural": 4})
    assert len(got["semantic"]) == 4 and len(got["procedural"]) == 3
    config = PackConfig(top_k={"semantic": 1, "procedural": 1})
    pack = _same_packs(store, "tea", config)
    assert [i.layer for i in pack.items] == ["semantic", "procedural"]


def test_ties_in_bm25_go_by_insertion_order_on_both_paths(db: sqlmem.MemoryDB) -> None:
    # 40 facts with the same text score alike; which 4 are the layer's candidates
    # decides the pack (their salience differs), so both paths must break ties alike.
    db.facts.index_many(
        Fact(id=f"f{n:02}", content="tea" + "!" * (n % 2), layer=LAYERS[n % 2], salience=n / 40)
        for n in range(40)
    )
    config = PackConfig(top_k={"semantic": 1, "procedural": 1})
    pack = _same_packs(db.facts, "tea", config)  # type: ignore[arg-type]
    assert [i.fact.id for i in pack.items] == ["f06", "f07"]  # the best of the first 4 each


def test_expired_and_unconfident_rows_never_count(db: sqlmem.MemoryDB) -> None:
    past = datetime.now(timezone.utc) - timedelta(days=1)
    db.facts.index_many(Fact(content=f"tea gone {n}", expires_at=past) for n in range(30))
    db.facts.index_many(Fact(content=f"tea unsure {n}", confidence=0.1) for n in range(30))
    db.facts.index(Fact(id="kept", content="tea kept"))
    store: SQLiteFactStore = db.facts  # type: ignore[assignment]
    got = store.layered_search("tea", {"semantic": 2}, min_confidence=0.5)
    assert [r[0] for r in got["semantic"]] == ["kept"]
    _same_packs(store, "tea", PackConfig(min_confidence=0.5))


def test_an_empty_query_takes_each_layers_newest(db: sqlmem.MemoryDB) -> None:
    for n in range(12):
        when = NOW - timedelta(hours=n)
        db.facts.index(Fact(content=f"note {n}", layer=LAYERS[n % 3], updated_at=when))
    store: SQLiteFactStore = db.facts  # type: ignore[assignment]
    got = store.layered_search("", {"episodic": 2})
    assert [r[1] for r in got["episodic"]] == ["note 2", "note 5"]
    _same_packs(store, "", PackConfig())


def test_a_long_query_keeps_its_rarest_words(db: sqlmem.MemoryDB) -> None:
    db.facts.index_many(Fact(content=f"word{n} tea", layer=LAYERS[n % 3]) for n in range(100))
    query = " ".join(f"word{n}" for n in range(100)) + " tea"  # over MAX_QUERY_TERMS
    _same_packs(db.facts, query, PackConfig())  # type: ignore[arg-type]


def test_several_stores_use_the_fast_path_each(tmp_path: Path) -> None:
    with sqlmem.open(tmp_path / "a.db") as a, sqlmem.open(tmp_path / "b.db") as b:
        a.facts.index(Fact(content="The user drinks tea"))
        b.facts.index(Fact(content="the user drinks tea."))  # same fingerprint
        b.facts.index(Fact(content="tea is brewed at 80 degrees", layer="procedural"))
        stores: Sequence[Any] = [a.facts, b.facts]
        fast = build_memory_pack(stores, "tea", now=NOW)
        slow = build_memory_pack([ProtocolOnly(s) for s in stores], "tea", now=NOW)  # type: ignore[misc]
        assert _summary(fast) == _summary(slow)
        assert fast.diagnostics["duplicates"] == 1


@pytest.mark.parametrize(
    "wants, floor",
    [({"nope": 1}, 0.0), ({"semantic": -1}, 0.0), ({"semantic": True}, 0.0),
     ({"semantic": 1}, 1.5), ({"semantic": 1}, "x"), (["semantic"], 0.0)],
)  # fmt: skip
def test_layered_search_refuses_bad_arguments(db: sqlmem.MemoryDB, wants: Any, floor: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        db.facts.layered_search("tea", wants, min_confidence=floor)  # type: ignore[attr-defined]


def test_a_custom_estimator_sees_each_whole_text(db: sqlmem.MemoryDB) -> None:
    db.facts.index_many(Fact(content=f"tea {'x' * n}", layer=LAYERS[n % 3]) for n in range(9))
    seen: list[str] = []

    def estimator(text: str) -> int:
        seen.append(text)
        return len(text)

    config = PackConfig(soft_budget_tokens=60, max_budget_tokens=60, estimator=estimator)
    pack = _same_packs(db.facts, "tea", config)  # type: ignore[arg-type]
    assert pack.tokens == len(pack.text) <= 60
    assert pack.text in seen and all(t.startswith("# Memory\n\n## ") for t in seen)


def test_the_statement_sorts_once_and_reads_facts_rows_lazily(db: sqlmem.MemoryDB) -> None:
    # One sorter (the FTS matches by bm25, bounded by the LIMIT); the outer ORDER BY is
    # satisfied by the co-routine's order, so each facts row is read only when stepped to
    # and the pack stops reading once every layer has its candidates.
    from sqlmem.sqlite.stores.pack_search import LAYERED

    db.facts.index_many(Fact(content=f"tea note {n}", layer=LAYERS[n % 3]) for n in range(200))
    params = {"query": '"tea"', "limit": 10, "min_confidence": 0.0, "now": 0}
    with db.facts._engine.read() as conn:  # type: ignore[attr-defined]
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + LAYERED, params)]
    assert sum("TEMP B-TREE" in step for step in plan) == 1, plan
    assert any(step.startswith("SEARCH f USING INTEGER PRIMARY KEY") for step in plan), plan


@pytest.mark.parametrize("wrong", ["facts", 42, []])
def test_a_pack_of_something_not_a_fact_store_names_what_it_takes(
    db: sqlmem.MemoryDB, wrong: Any
) -> None:
    # A database passed where its `.facts` belongs raised a bare TypeError ("not iterable").
    for store in (db, wrong):
        with pytest.raises(InvalidArgumentError, match=r"\.facts"):
            build_memory_pack(store, "tea")
        with pytest.raises(InvalidArgumentError, match=r"\.facts"):
            sqlmem.inject_memory(store, "tea")
