"""SPEC 17-18: `SqlmemStore(index=...)`, LangGraph's vector search in the memory file.

Written from the behaviour langgraph-checkpoint-sqlite's vector tests check (fields and a
put's own `index`, `index=False`, updates re-embed, filters before ranking, pages, score =
cosine), plus sqlmem's: the model never runs under the write lock, an embedder that fails
loses no write, vectors go with their item (delete, update, TTL sweep), hybrid ranking.
A deterministic embedder (word counts over a small vocabulary) makes every score exact;
wordllama makes one real semantic case.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import PutOp, SearchOp

import sqlmem
from sqlmem.adapters.langgraph import AsyncSqlmemStore, SqlmemStore
from sqlmem.search.vectors import RRF_K

VOCAB = ["red", "green", "blue", "apple", "car", "tea", "sea", "sky", "fast", "slow"]


def embed(texts: Sequence[str]) -> list[list[float]]:
    """Word counts over VOCAB ("crimson" counts as "red": a synonym BM25 cannot see):
    cosines are exact and easy to reason about; a text with no vocabulary word gets the
    zero vector (no usable vector)."""
    out = []
    for text in texts:
        words = ["red" if w == "crimson" else w for w in re.findall(r"[a-z]+", text.lower())]
        out.append([float(words.count(w)) for w in VOCAB])
    return out


def cosine(a: str, b: str) -> float:
    x, y = np.asarray(embed([a])[0]), np.asarray(embed([b])[0])
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


INDEX: dict[str, Any] = {"dims": len(VOCAB), "embed": embed, "fields": ["title", "body"]}


@pytest.fixture
def store(db: sqlmem.MemoryDB) -> Iterator[SqlmemStore]:
    s = SqlmemStore(db, index=INDEX)
    yield s
    s.close()


def _vector_rows(db: sqlmem.MemoryDB) -> list[tuple[str, str]]:
    with db.engine.read() as conn:
        rows = conn.execute("SELECT key, field FROM kv_vectors ORDER BY key, field").fetchall()
    return [(str(k), str(f)) for k, f in rows]


def test_search_ranks_by_the_best_field_cosine(store: SqlmemStore) -> None:
    store.put(("docs",), "a", {"title": "red apple", "body": "slow sea"})
    store.put(("docs",), "b", {"title": "blue car", "body": "fast car"})
    store.put(("docs",), "c", {"title": "green tea"})
    store.put(("docs",), "d", {"other": "red car"})  # no indexed field: no vector
    found = store.search(("docs",), query="fast car")
    assert [r.key for r in found] == ["b", "c", "a", "d"]
    assert found[0].score == pytest.approx(cosine("fast car", "fast car"), abs=1e-6)
    # "a" and "c" share no word with the query: cosine 0, still ranked (newest first)
    assert [(r.key, r.score) for r in found[1:]] == [("c", 0.0), ("a", 0.0), ("d", None)]
    best = store.search(("docs",), query="red sea")[0]
    assert best.key == "a"
    assert best.score == pytest.approx(
        max(cosine("red sea", "red apple"), cosine("red sea", "slow sea")), abs=1e-6
    )
    page = store.search(("docs",), query="red sea", limit=2, offset=1)
    assert [r.key for r in page] == [r.key for r in store.search(("docs",), query="red sea")][1:3]


def test_fields_a_puts_own_index_and_index_false(store: SqlmemStore, db: sqlmem.MemoryDB) -> None:
    store.put(("d",), "default", {"title": "red", "body": "tea", "x": "sky"})
    store.put(("d",), "own", {"title": "red", "x": "sky"}, index=["x"])
    store.put(("d",), "list", {"tags": ["sea", "sky", 3]}, index=["tags[*]"])
    store.put(("d",), "whole", {"a": {"b": "blue"}}, index=["$"])
    store.put(("d",), "none", {"title": "sky"}, index=False)
    assert _vector_rows(db) == [
        ("default", "body"),
        ("default", "title"),
        ("list", "tags[*].0"),
        ("list", "tags[*].1"),  # "3" is no vocabulary word: no vector, no row
        ("own", "x"),
        ("whole", "$"),
    ]
    found = {r.key: r.score for r in store.search(("d",), query="sky")}
    assert found["own"] == pytest.approx(1.0) and found["list"] == pytest.approx(1.0)
    assert found["default"] == 0.0 and found["none"] is None
    assert store.search(("d",), query="sky")[-1].key == "none"  # unscored after the scored
    no_index = SqlmemStore(db)  # a store without index: searches by BM25, puts drop vectors
    no_index.put(("d",), "own", {"title": "sky"})
    assert ("own", "x") not in _vector_rows(db)
    lexical = no_index.search(("d",), query="sky")  # BM25 over the items' strings
    assert {r.key for r in lexical} == {"default", "own", "list", "none"}
    assert all(r.score is not None and r.score > 0 for r in lexical)


def test_vectors_go_with_their_item(store: SqlmemStore, db: sqlmem.MemoryDB) -> None:
    ttl_store = SqlmemStore(db, index=INDEX, ttl={"default_ttl": 1})
    store.put(("v",), "upd", {"title": "red apple"})
    store.put(("v",), "del", {"title": "blue car"})
    ttl_store.put(("v",), "ttl", {"title": "green tea"})
    assert len(_vector_rows(db)) == 3
    store.put(("v",), "upd", {"title": "slow sea"})  # re-embedded
    assert {r.key: r.score for r in store.search(("v",), query="red apple")}["upd"] == 0.0
    assert store.search(("v",), query="slow sea")[0].score == pytest.approx(1.0)
    store.delete(("v",), "del")
    with db.engine.write() as conn:
        conn.execute("UPDATE kv SET expires_at = 1 WHERE key = 'ttl'")
    assert [r.key for r in store.search(("v",), query="green tea")] == ["upd"]
    assert ttl_store.sweep_ttl() == 1
    assert _vector_rows(db) == [("upd", "title")]


def test_filters_apply_before_ranking(store: SqlmemStore) -> None:
    store.put(("f",), "best", {"title": "red apple", "kind": "x", "n": 1})
    store.put(("f",), "next", {"title": "red car", "kind": "y", "n": 5})
    store.put(("f",), "last", {"title": "blue sky", "kind": "y", "n": 9})
    assert [r.key for r in store.search(("f",), query="red apple", limit=1)] == ["best"]
    found = store.search(("f",), query="red apple", filter={"kind": "y"}, limit=1)
    assert [r.key for r in found] == ["next"]
    found = store.search(("f",), query="blue", filter={"n": {"$gte": 5}})
    assert [r.key for r in found] == ["last", "next"]
    assert store.search(("g",), query="red") == []  # nothing under the prefix


def test_the_model_never_runs_under_the_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    calls: list[int] = []

    def checking(texts: Sequence[str]) -> list[list[float]]:
        other = sqlite3.connect(path, timeout=0)  # another process's view of the lock
        try:
            other.execute("BEGIN IMMEDIATE")  # fails at once if anybody holds it
            other.execute("ROLLBACK")
        finally:
            other.close()
        calls.append(len(texts))
        return embed(texts)

    store = SqlmemStore(path, index={"dims": len(VOCAB), "embed": checking})
    try:
        ops = [
            PutOp(("n",), "a", {"t": "red sea"}),
            PutOp(("n",), "b", {"t": "red car"}),
            SearchOp(("n",), query="sea", limit=5),
        ]
        results = store.batch(ops)
        assert [r.key for r in results[2]] == ["a", "b"]  # the batch sees its own puts
        asyncio.run(store.aput(("n",), "c", {"t": "sky"}))
        assert calls[0] == 2  # the batch's texts go to the model in one call
    finally:
        store.close()


def test_an_embedder_that_fails_loses_no_write(
    db: sqlmem.MemoryDB, caplog: pytest.LogCaptureFixture
) -> None:
    broken = {"on": True}

    def flaky(texts: Sequence[str]) -> list[list[float]]:
        if broken["on"]:
            raise ConnectionError("embedding API down")
        return embed(texts)

    store = SqlmemStore(db, index={"dims": len(VOCAB), "embed": flaky})
    with caplog.at_level(logging.WARNING, logger="sqlmem"):
        store.put(("e",), "a", {"t": "red sea"})
    assert "without vectors" in caplog.text
    assert store.get(("e",), "a") is not None and _vector_rows(db) == []
    broken["on"] = False
    store.put(("e",), "b", {"t": "red car"})
    assert [(r.key, r.score is None) for r in store.search(("e",), query="car")] == [
        ("b", False),
        ("a", True),
    ]
    wrong = SqlmemStore(db, index={"dims": 3, "embed": embed})  # the model gives 10 dims
    wrong.put(("e",), "c", {"t": "red"})  # stored, without a vector
    assert wrong.get(("e",), "c") is not None
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="sqlmem"):
        found = wrong.search(("e",), query="red")  # no query vector: all unscored
    assert "searching without its vector" in caplog.text
    assert [(r.key, r.score) for r in found] == [("c", None), ("b", None), ("a", None)]
    broken["on"] = True
    assert [r.score for r in store.search(("e",), query="car")] == [None, None, None]
    with pytest.raises(sqlmem.InvalidArgumentError):  # not JSON: refused whole, no TypeError
        store.put(("e",), "bytes", {"t": b"red"})
    assert store.get(("e",), "bytes") is None


def test_async_store_with_an_async_embedder(tmp_path: Path) -> None:
    async def aembed(texts: Sequence[str]) -> list[list[float]]:
        await asyncio.sleep(0)
        return embed(texts)

    async def main() -> None:
        store = AsyncSqlmemStore(tmp_path / "memory.db", index={"dims": 10, "embed": aembed})
        try:
            await store.aput(("a",), "1", {"t": "green tea"})
            await store.aput(("a",), "2", {"t": "fast car"})
            found = await store.asearch(("a",), query="car")
            assert [r.key for r in found] == ["2", "1"]
            # default fields ["$"]: the whole value as JSON text
            assert found[0].score == pytest.approx(cosine("car", '{"t": "fast car"}'))
        finally:
            store.close()

    asyncio.run(main())


def test_hybrid_fuses_bm25_and_vector_ranks(db: sqlmem.MemoryDB) -> None:
    store = SqlmemStore(db, index={**INDEX, "fields": ["t"], "hybrid": True})
    store.put(("h",), "both", {"t": "red apple pie"})  # BM25 and vector hit
    store.put(("h",), "lexical", {"t": "pie crust"})  # BM25 only: no vocabulary word
    store.put(("h",), "vector", {"t": "crimson sea sky"})  # vector only (a synonym)
    store.put(("h",), "neither", {"t": "blue sky"})  # cosine 0: ranked last by vectors
    found = store.search(("h",), query="red pie")
    assert [r.key for r in found][:3] == ["both", "lexical", "vector"]
    assert found[0].score == pytest.approx(2 / (RRF_K + 1))
    assert found[1].score == pytest.approx(1 / (RRF_K + 2))
    assert found[2].score == pytest.approx(1 / (RRF_K + 2))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from([*VOCAB, "zzz"]), max_size=4), min_size=1, max_size=12),
    st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3),
    st.integers(1, 6),
    st.integers(0, 3),
)
def test_ranking_is_exact_cosine(
    tmp_path_factory: pytest.TempPathFactory,
    docs: list[list[str]],
    query: list[str],
    limit: int,
    offset: int,
) -> None:
    q = " ".join(query)
    with sqlmem.open(tmp_path_factory.mktemp("rank") / "memory.db") as db:
        store = SqlmemStore(db, index={"dims": len(VOCAB), "embed": embed, "fields": ["t"]})
        for i, words in enumerate(docs):
            store.put(("r",), f"k{i}", {"t": " ".join(words)})
        found = store.search(("r",), query=q, limit=limit, offset=offset)
    # The reference: float64 cosines, best first, ties newest first, then the items with
    # no vector (newest first). Compared as score sequences rounded to 1e-6, so float32
    # noise between equal cosines cannot flip the comparison; equal scores in any order.
    scored = []
    for i, words in enumerate(docs):
        if any(w in VOCAB for w in words):
            scored.append((-round(cosine(q, " ".join(words)), 6), -i))
    unscored = [None] * sum(1 for words in docs if not any(w in VOCAB for w in words))
    expected: list[float | None] = [-c for c, _ in sorted(scored)] + unscored
    got = [None if r.score is None else round(r.score, 6) for r in found]
    assert got == expected[offset : offset + limit]
    for r in found:
        text = " ".join(docs[int(r.key[1:])])
        if r.score is None:
            assert not any(w in VOCAB for w in text.split())
        else:
            assert r.score == pytest.approx(cosine(q, text), abs=1e-6)


def test_wordllama_finds_what_bm25_cannot(db: sqlmem.MemoryDB) -> None:
    from sqlmem.embedders import WordLlamaEmbedder

    model = WordLlamaEmbedder()
    index = {"dims": 256, "embed": lambda texts: model.embed(list(texts)).tolist()}
    store = SqlmemStore(db, index=index)
    plain = SqlmemStore(db)
    for key, text in [("v", "The user is vegetarian."), ("b", "The user lives in Berlin.")]:
        store.put(("facts",), key, {"text": text})
    store.put(("facts",), "d", {"text": "Deploy with make"})
    assert plain.search(("facts",), query="what do I eat?") == []
    assert store.search(("facts",), query="what do I eat?", limit=1)[0].key == "v"
