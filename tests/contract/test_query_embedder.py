"""Asymmetric embedders on every backend: a search embeds its query with `embed_query`
when the embedder has one, and stored texts always go through `embed`.

The fake embedder below puts a query somewhere a stored text with the same words never
lands: `embed_query("alpha")` is the vector of the stored text "bravo". A store that
embedded the query with `embed` would rank the fact "alpha" first; one that used
`embed_query` ranks "bravo" first. Every path that turns a query into a vector is checked
(fact search vector and hybrid, packs, inject_memory, the tools), and so is the other
direction: stored texts never reach `embed_query`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import sqlmem
from sqlmem import Fact
from sqlmem.embedders import HashEmbedder
from sqlmem.rules.embedder import embed_queries, has_query_side
from sqlmem.rules.history_modes import vector_text

#: What a query means to the fake model: the stored text its vector equals.
QUERY_MEANS = {"alpha": "bravo", "charlie": "delta"}


class AsymmetricEmbedder:
    """Word hashing for stored texts; a query is embedded as the text it "means"."""

    def __init__(self) -> None:
        self.inner = HashEmbedder(64)
        self.model = "fake-asymmetric"
        self.documents: list[str] = []
        self.queries: list[str] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.documents.extend(texts)
        return self.inner.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.queries.extend(texts)
        return self.inner.embed([QUERY_MEANS.get(t, t) for t in texts])


Make = Callable[[Any], Any]


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def make_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Make]:
    """`make_db(embedder)`: a database (facts, docs, history) on one backend."""
    opened: list[Any] = []

    def build(embedder: Any) -> Any:
        if request.param == "memory":
            db = sqlmem.inmemory.open(embedder=embedder)
        elif request.param == "postgres":
            from pgserver import new_agent_id

            from sqlmem import postgres

            dsn = request.getfixturevalue("pg_dsn")
            db = postgres.open(dsn, new_agent_id(), embedder=embedder, pool_size=2)
        else:
            db = sqlmem.open(tmp_path / f"m{len(opened)}.db", embedder=embedder)
        opened.append(db)
        return db

    yield build
    for db in opened:
        db.close()


def _stored(db: Any) -> None:
    db.facts.index_many(
        [
            Fact(id="a", content="alpha"),
            Fact(id="b", content="bravo"),
            Fact(id="c", content="charlie"),
            Fact(id="d", content="delta"),
        ]
    )


def test_the_helper_picks_embed_query_only_when_there_is_one() -> None:
    asymmetric, plain = AsymmetricEmbedder(), HashEmbedder(64)
    assert has_query_side(asymmetric) and not has_query_side(plain)
    assert isinstance(asymmetric, sqlmem.QueryEmbedder)
    assert not isinstance(plain, sqlmem.QueryEmbedder)
    np.testing.assert_array_equal(embed_queries(asymmetric, ["alpha"]), plain.embed(["bravo"]))
    np.testing.assert_array_equal(embed_queries(plain, ["alpha"]), plain.embed(["alpha"]))


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_fact_search_embeds_the_query_with_embed_query(make_db: Make, mode: str) -> None:
    embedder = AsymmetricEmbedder()
    db = make_db(embedder)
    _stored(db)
    found = db.facts.search("alpha", top_k=4, mode=mode)
    if mode == "vector":
        assert found[0].id == "b"  # the query's own meaning, not the stored text's words
    else:  # BM25 ranks "a" first, the vectors "b": each leg puts its own first
        assert [f.id for f in found[:2]] == ["a", "b"]
    assert embedder.queries == ["alpha"]
    assert "alpha" not in embedder.documents[4:]  # stored texts only went through embed
    assert sorted(embedder.documents) == ["alpha", "bravo", "charlie", "delta"]


def test_a_query_vector_is_not_taken_from_a_stored_texts_cache(make_db: Make) -> None:
    """The same words as a stored text and as a query have two vectors: the cache that
    saves re-embedding stored texts must not hand the stored one to a search."""
    embedder = AsymmetricEmbedder()
    db = make_db(embedder)
    _stored(db)
    for _ in range(2):  # the second search may use the cache: of queries, not of texts
        assert db.facts.search("charlie", top_k=1, mode="vector")[0].id == "d"


def test_packs_inject_memory_and_tools_embed_queries_with_embed_query(make_db: Make) -> None:
    embedder = AsymmetricEmbedder()
    db = make_db(embedder)
    _stored(db)
    pack = sqlmem.build_memory_pack(db.facts, "charlie")
    assert "delta" in pack.text
    assert embedder.queries == ["charlie"]
    assert "delta" in sqlmem.inject_memory(db.facts, "charlie", max_facts=2)
    tools = sqlmem.MemoryTools(db)
    found = json.loads(tools.call("search_memory", {"query": "charlie", "top_k": 2}))
    assert {r["content"] for r in found["results"]} == {"charlie", "delta"}
    assert set(embedder.queries) == {"charlie"}
    assert embedder.documents.count("charlie") <= 1  # embedded once, as a stored text


def test_an_embed_query_that_is_not_callable_is_refused() -> None:
    class Broken:
        model = "broken"
        embed_query = "not a method"

        def embed(self, texts: Sequence[str]) -> Any:
            return np.ones((len(texts), 4), dtype=np.float32)

    with pytest.raises(sqlmem.InvalidArgumentError, match="embed_query"):
        sqlmem.InMemoryFactStore(embedder=Broken())


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_history_search_embeds_the_query_with_embed_query(make_db: Make, mode: str) -> None:
    embedder = AsymmetricEmbedder()
    db = make_db(embedder)
    db.history.append_many(
        "s", [sqlmem.Message(role="user", content=w) for w in ("alpha", "bravo", "charlie")]
    )
    found = db.history.search("alpha", top_k=3, mode=mode)
    assert [m.content for m in found[: 1 if mode == "vector" else 2]] == (
        ["bravo"] if mode == "vector" else ["alpha", "bravo"]
    )
    assert embedder.queries == ["alpha"]
    stored = db.history.get_all("s")  # each embedded as its text after its date
    assert embedder.documents == [vector_text(m.content, m.name, m.created_at) for m in stored]


def test_the_conversation_tool_searches_by_meaning_with_an_embedder(make_db: Make) -> None:
    embedder = AsymmetricEmbedder()
    db = make_db(embedder)
    db.history.append_many("s", [sqlmem.Message(role="user", content=w) for w in ("x", "delta")])
    tools = sqlmem.MemoryTools(db)
    found = json.loads(tools.call("search_conversations", {"query": "charlie"}))
    assert found["results"][0]["content"] == "delta"  # no shared word: found by vectors
    assert embedder.queries == ["charlie"]
