"""SPEC 17 on both fact stores: vectors stored with their facts, computed outside the write
lock, cached by content; modes "vector" and "hybrid" under the same filters; an embedder's
failure never costs a write; embed_pending; the twin agrees with SQLite."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem import Fact, InvalidArgumentError
from sqlmem.embedders import HashEmbedder, WordLlamaEmbedder
from sqlmem.protocols import FactStore
from sqlmem.search.vectors import RRF_K, checked_rows
from sqlmem.sqlite.transfer.export import export_records
from sqlmem.sqlite.transfer.importer import import_lines


class CountingEmbedder:
    """HashEmbedder that counts the texts it embeds and can be told to fail or misbehave."""

    def __init__(self, dim: int = 32) -> None:
        self.inner = HashEmbedder(dim)
        self.model = self.inner.model
        self.texts: list[str] = []
        self.mode = "ok"
        self.on_call: Callable[[], None] | None = None

    def embed(self, texts: Sequence[str]) -> Any:
        if self.on_call is not None:
            self.on_call()
        self.texts.extend(texts)
        out = self.inner.embed(texts)
        if self.mode == "raise":
            raise ConnectionError("embedding API down")
        if self.mode == "nan":
            out[:] = np.nan
        if self.mode == "float64":
            return out.astype(np.float64)
        if self.mode == "short":
            return out[:-1]
        return out


Make = Callable[..., Any]


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Make]:
    """`make(embedder)`: a fact store with that embedder (a MemoryDB's for SQLite, a
    fresh agent of the session's server for PostgreSQL)."""
    opened: list[Any] = []

    def build(embedder: Any = None) -> Any:
        if request.param == "memory":
            return sqlmem.InMemoryFactStore(embedder=embedder)
        if request.param == "postgres":
            from pgserver import new_agent_id

            from sqlmem import postgres

            dsn = request.getfixturevalue("pg_dsn")
            pg = postgres.open(dsn, new_agent_id(), embedder=embedder, pool_size=2)
            opened.append(pg)
            return pg.facts
        db = sqlmem.open(tmp_path / f"m{len(opened)}.db", embedder=embedder)
        opened.append(db)
        return db.facts

    build.kind = request.param  # type: ignore[attr-defined]
    yield build
    for db in opened:
        db.close()


def _cos(embedder: Any, a: str, b: str) -> float:
    x, y = checked_rows(embedder.embed([a, b]), 2)
    assert x is not None and y is not None
    return float(x @ y)


def test_vector_search_ranks_by_cosine_with_filters_first(make: Make) -> None:
    embedder = CountingEmbedder()
    facts = make(embedder)
    facts.index(Fact(id="a", content="red apples and green pears", tags=["fruit"]))
    facts.index(Fact(id="b", content="red cars and fast bikes", tags=["road"]))
    facts.index(Fact(id="c", content="green tea", tags=["fruit"], layer="episodic"))
    got = facts.search("red apples", mode="vector", top_k=3)
    assert got[0].id == "a"
    assert got[0].score == pytest.approx(_cos(embedder, "red apples", got[0].content), abs=1e-6)
    assert [f.id for f in facts.search("red apples", mode="vector", tags=["road"])] == ["b"]
    assert [f.id for f in facts.search("red", mode="vector", layer="episodic")] == ["c"]
    assert facts.search("red", mode="vector", top_k=0) == []
    assert facts.search("   ", mode="vector") == []


def test_hybrid_fuses_bm25_and_vector_ranks(make: Make) -> None:
    embedder = CountingEmbedder()
    facts = make(embedder)
    facts.index(Fact(id="a", content="alpha beta"))
    facts.index(Fact(id="b", content="gamma delta"))
    embedder.mode = "raise"  # "c" is stored without a vector: BM25 only
    facts.index(Fact(id="c", content="alpha alpha alpha"))
    embedder.mode = "ok"
    lexical = [f.id for f in facts.search("alpha", mode="any", top_k=50)]
    semantic = [f.id for f in facts.search("alpha", mode="vector", top_k=50)]
    assert "c" in lexical and "c" not in semantic
    hybrid = facts.search("alpha", mode="hybrid", top_k=10)
    expected: dict[str, float] = {}
    for ranking in (lexical, semantic):
        for rank, fact_id in enumerate(ranking, start=1):
            expected[fact_id] = expected.get(fact_id, 0.0) + 1 / (RRF_K + rank)
    assert {f.id: f.score for f in hybrid} == pytest.approx(expected)
    scores = [f.score for f in hybrid]
    assert scores == sorted(scores, reverse=True)


def test_vector_modes_need_an_embedder(make: Make) -> None:
    facts = make(None)
    facts.index(Fact(content="x"))
    for mode in ("vector", "hybrid"):
        with pytest.raises(InvalidArgumentError, match="embedder"):
            facts.search("x", mode=mode)
    with pytest.raises(InvalidArgumentError):
        facts.embed_pending()
    with pytest.raises(InvalidArgumentError):
        make(object())  # not an embedder


@pytest.mark.parametrize("mode", ["raise", "nan", "float64", "short"])
def test_a_failing_embedder_never_costs_the_write(
    make: Make, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = CountingEmbedder()
    facts = make(embedder)
    embedder.mode = mode
    with caplog.at_level(logging.WARNING, logger="sqlmem"):
        facts.index_many([Fact(id="a", content="apples"), Fact(id="b", content="pears")])
    assert facts.count() == 2 and facts.get("a") is not None
    assert "stored without vectors" in caplog.text
    assert facts.search("apples", mode="vector") == []  # no corrupt vector anywhere
    assert [f.id for f in facts.search("apples", mode="hybrid")] == ["a"]  # BM25 leg
    embedder.mode = "ok"
    seen: list[tuple[int, int]] = []
    assert facts.embed_pending(batch_size=1, progress=lambda d, t: seen.append((d, t))) == 2
    assert seen == [(1, 2), (2, 2)]
    assert facts.embed_pending() == 0
    assert [f.id for f in facts.search("apples", mode="vector", top_k=1)] == ["a"]


def test_stats_count_facts_without_vectors(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    with sqlmem.open(tmp_path / "m.db", embedder=embedder) as db:
        db.facts.index(Fact(content="one"))
        embedder.mode = "raise"
        db.facts.index(Fact(content="two"))
        assert db.stats()["facts_without_vectors"] == 1
        embedder.mode = "ok"
        db.facts.embed_pending()
        assert db.stats()["facts_without_vectors"] == 0
    with sqlmem.open(tmp_path / "m.db", embedder=HashEmbedder(16)) as other_model:
        # vectors of another model count as missing, and embed_pending replaces them
        assert other_model.stats()["facts_without_vectors"] == 2
        assert other_model.facts.embed_pending() == 2
        assert other_model.facts.search("one", mode="vector", top_k=1)[0].content == "one"


def test_identical_content_is_embedded_once_and_unchanged_text_keeps_its_vector(
    make: Make,
) -> None:
    embedder = CountingEmbedder()
    facts = make(embedder)
    facts.index(Fact(id="a", content="same words"))
    facts.index(Fact(id="b", content="same words"))
    facts.index(Fact(id="a", content="same words", tags=["x"]))  # update, text unchanged
    assert embedder.texts == ["same words"]
    facts.index(Fact(id="a", content="new words entirely"))
    assert embedder.texts == ["same words", "new words entirely"]
    best = facts.search("new words entirely", mode="vector", top_k=1)
    assert best[0].id == "a" and best[0].score == pytest.approx(1.0, abs=1e-6)


def test_remember_embeds_new_items_and_merges_keep_theirs(make: Make) -> None:
    embedder = CountingEmbedder()
    facts = make(embedder)
    first = facts.remember(Fact(content="The user likes tea."))
    assert facts.remember(Fact(content="the user LIKES tea")) == first
    assert facts.search("likes tea", mode="vector", top_k=5)[0].id == first
    assert len(facts.search("likes tea", mode="vector", top_k=5)) == 1


def test_expired_and_deleted_facts_leave_vector_search(make: Make) -> None:
    facts = make(CountingEmbedder())
    past = datetime.now(timezone.utc) - timedelta(seconds=1)
    facts.index(Fact(id="gone", content="blue sky", expires_at=past))
    facts.index(Fact(id="del", content="blue sea"))
    facts.index(Fact(id="kept", content="blue car"))
    facts.delete("del")
    assert [f.id for f in facts.search("blue", mode="vector", top_k=10)] == ["kept"]
    assert [f.id for f in facts.search("blue", mode="hybrid", top_k=10)] == ["kept"]


def test_a_zero_query_vector_gives_no_vector_hits(make: Make) -> None:
    facts = make(CountingEmbedder())
    facts.index(Fact(id="a", content="words here"))
    assert facts.search("!!!", mode="vector") == []  # no words: HashEmbedder gives zeros
    assert facts.search("!!! words", mode="hybrid")[0].id == "a"


def test_the_model_runs_outside_the_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    embedder = CountingEmbedder()
    with (
        sqlmem.open(path, embedder=embedder) as db,
        sqlmem.open(path, sqlmem.StoreConfig(busy_timeout_ms=0)) as other,
    ):
        written: list[int] = []
        embedder.on_call = lambda: written.append(
            other.history.append("s", sqlmem.Message(role="user", content="meanwhile"))
        )
        db.facts.index_many([Fact(content=f"fact {i}") for i in range(5)])
        db.facts.remember(Fact(content="remembered"))
        db.facts.index(Fact(content="indexed"))
        assert written == [1, 2, 3]  # another writer got through during each embedding


def test_vacuum_forgets_a_deleted_facts_vector(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    embedder = CountingEmbedder(dim=64)
    with sqlmem.open(path, embedder=embedder) as db:
        db.facts.index(Fact(id="secret", content="the launch code is zebra"))
        (vector,) = checked_rows(embedder.embed(["the launch code is zebra"]), 1)
        assert vector is not None
        blob = vector.astype("<f4").tobytes()
        db.checkpoint()
        assert blob in path.read_bytes()
        db.facts.delete("secret")
        db.vacuum()
    data = path.read_bytes() + (
        Path(f"{path}-wal").read_bytes() if Path(f"{path}-wal").exists() else b""
    )
    assert blob not in data


def test_wordllama_finds_what_bm25_cannot(make: Make) -> None:
    facts: FactStore = make(WordLlamaEmbedder())
    for text in ("The user is vegetarian.", "The user lives in Berlin.", "Deploy with make"):
        facts.index(Fact(content=text))
    assert facts.search("what do I eat?", mode="any") == []
    assert facts.search("what do I eat?", mode="vector", top_k=1)[0].content == (
        "The user is vegetarian."
    )
    assert facts.search("what do I eat?", mode="hybrid", top_k=1)[0].content == (
        "The user is vegetarian."
    )
    block = sqlmem.inject_memory(facts, "what do I eat?", max_facts=1)
    assert block == "## Relevant Memory\n\n- The user is vegetarian.\n"


WORDS = ["red", "green", "tea", "apple", "car", "sea", "sky", "blue", "fast", "slow"]


@settings(max_examples=25)
@given(
    st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), min_size=1, max_size=15),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.integers(1, 8),
)
def test_sqlite_and_the_twin_agree(
    tmp_path_factory: pytest.TempPathFactory,
    texts: list[list[str]],
    query: list[str],
    top_k: int,
) -> None:
    embedder = HashEmbedder(16)
    twin = sqlmem.InMemoryFactStore(embedder=embedder)
    with sqlmem.open(tmp_path_factory.mktemp("agree") / "m.db", embedder=embedder) as db:
        for i, words in enumerate(texts):
            fact = Fact(id=f"f{i}", content=" ".join(words), tags=[words[0]])
            db.facts.index(fact)
            twin.index(fact)
        q = " ".join(query)
        for mode in ("vector", "hybrid"):
            for kwargs in ({}, {"tags": [query[0]]}):
                a = db.facts.search(q, mode=mode, top_k=top_k, **kwargs)
                b = twin.search(q, mode=mode, top_k=top_k, **kwargs)
                assert [f.score for f in a] == pytest.approx([f.score for f in b], abs=1e-6)
                if mode == "vector":  # equal cosines rank by insertion in both
                    assert [f.id for f in a] == [f.id for f in b]


def test_vectors_travel_in_the_export_and_import_checks_them(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    source, target, plain = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "c.db"
    dump = tmp_path / "dump.jsonl"
    with sqlmem.open(source, embedder=embedder) as db:
        db.facts.index(Fact(id="a", content="red apples"))
        db.facts.index(Fact(id="b", content="blue sea"))
        embedder.mode = "raise"
        db.facts.index(Fact(id="c", content="no vector yet"))
        embedder.mode = "ok"
        with dump.open("w") as out:
            for record in export_records(db):
                out.write(json.dumps(record) + "\n")
    records = [line for line in dump.read_text().splitlines() if '"type": "vector"' in line]
    assert len(records) == 2
    calls = len(embedder.texts)
    with sqlmem.open(target, embedder=embedder) as db:
        counts = import_lines(db, dump.read_text().splitlines())
        assert (counts.vectors, counts.vectors_skipped) == (2, 0)
        assert embedder.texts[calls:] == ["no vector yet"]  # only the missing one embedded
        assert db.stats()["facts_without_vectors"] == 0
        assert db.facts.search("red apples", mode="vector", top_k=1)[0].id == "a"
        again = import_lines(db, dump.read_text().splitlines())
        assert (again.vectors, again.vectors_skipped) == (0, 2)
    with sqlmem.open(plain) as db:  # no embedder: the vectors are kept all the same
        import_lines(db, dump.read_text().splitlines())
        assert db.stats()["facts_without_vectors"] == 0  # nothing waits without an embedder
    with sqlmem.open(plain, embedder=embedder) as db:  # the two vectors came in
        assert db.stats()["facts_without_vectors"] == 1


def test_the_in_memory_matrix_follows_every_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unfiltered vector search on a large store ranks a kept copy of the vectors; it must
    see this process's writes, another connection's, deletes, and expiry at once."""
    from sqlmem.sqlite.stores import vectors as sqlite_vectors

    monkeypatch.setattr(sqlite_vectors, "MATRIX_MIN_ROWS", 1)  # keep it from the first row
    embedder = CountingEmbedder()
    path = tmp_path / "m.db"
    with sqlmem.open(path, embedder=embedder) as db, sqlmem.open(path, embedder=embedder) as other:
        db.facts.index(Fact(id="a", content="red apples"))
        db.facts.index(Fact(id="b", content="blue sea"))
        assert db.facts.search("red apples", mode="vector", top_k=1)[0].id == "a"
        assert db.facts._vectors._matrix is not None  # type: ignore[attr-defined]
        other.facts.index(Fact(id="c", content="green tea"))  # another connection
        assert db.facts.search("green tea", mode="vector", top_k=1)[0].id == "c"
        db.facts.index(Fact(id="a", content="yellow bananas"))  # content changed
        assert db.facts.search("yellow bananas", mode="vector", top_k=1)[0].id == "a"
        other.facts.delete("c")
        assert "c" not in [f.id for f in db.facts.search("green tea", mode="vector")]
        soon = datetime.now(timezone.utc) - timedelta(seconds=1)
        db.facts.index(Fact(id="b", content="blue sea", expires_at=soon))
        assert [f.id for f in db.facts.search("blue sea", mode="vector")] == ["a"]
        unfiltered = [f.id for f in db.facts.search("bananas", mode="vector")]
        filtered = [f.id for f in db.facts.search("bananas", mode="vector", min_confidence=0)]
        assert unfiltered == filtered  # the matrix and the SQL path agree
