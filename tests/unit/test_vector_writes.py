"""How the SQLite fact store writes vectors under the write lock, and how it finds vectors
already stored: a batch is one statement counted once in fact_vectors_version, every other
writer is still counted row by row, and the embedding cache finds identical content
through the facts' fingerprint index (the vectors keep no index of their own)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem import Fact
from sqlmem.embedders import HashEmbedder
from sqlmem.search.vectors import to_blob
from sqlmem.sqlite.stores import vectors as sqlite_vectors
from sqlmem.sqlite.stores import vectors_sql


class CountingEmbedder:
    """HashEmbedder that records the texts it embeds."""

    def __init__(self, dim: int = 16) -> None:
        self.inner = HashEmbedder(dim)
        self.model = self.inner.model
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def _client(path: Path) -> apsw.Connection:
    """Another SQLite client of the file, in this process: through apsw's SQLite (a second
    SQLite library in one process would release the other's file locks on close)."""
    conn = apsw.Connection(str(path))
    conn.pragma("foreign_keys", "ON")
    return conn


def _version(path: Path) -> tuple[int, int]:
    conn = _client(path)
    try:
        row = conn.execute("SELECT changes, batch_counted FROM fact_vectors_version").get
    finally:
        conn.close()
    assert isinstance(row, tuple)
    return int(row[0]), int(row[1])


def _facts(n: int, prefix: str = "f") -> list[Fact]:
    return [Fact(id=f"{prefix}{i}", content=f"{prefix} fact {i} about w{i}x{i}") for i in range(n)]


def test_a_batch_is_counted_once_and_the_flag_is_down_after_it(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with sqlmem.open(path, embedder=CountingEmbedder()) as db:
        before, _ = _version(path)
        db.facts.index_many(_facts(50))
        after, flag = _version(path)
        assert (after - before, flag) == (1, 0), (before, after)
        assert db.stats()["facts_without_vectors"] == 0
        db.facts.index(Fact(id="one", content="a single fact"))  # below the batch size
        assert _version(path) == (after + 1, 0)  # the trigger counted its row


def test_a_batch_rolled_back_inside_atomic_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    embedder = CountingEmbedder()
    with sqlmem.open(path, embedder=embedder) as db:
        db.facts.index_many(_facts(6, "known"))  # their vectors are known inside atomic()
        before = _version(path)
        with pytest.raises(RuntimeError), db.atomic():
            db.facts.index_many(_facts(6, "known"))
            raise RuntimeError("the block fails")
        assert _version(path) == before
        # another client's write is still counted (the flag was rolled back with the rows)
        conn = _client(path)
        conn.execute("DELETE FROM fact_vectors WHERE fact_pk = (SELECT min(pk) FROM facts)")
        conn.close()
        assert _version(path) == (before[0] + 1, 0)


def test_other_writers_are_counted_row_by_row(tmp_path: Path) -> None:
    """A plain SQLite client inserting or replacing vectors moves the version per row, so
    the kept matrix of an unfiltered search notices."""
    path = tmp_path / "m.db"
    embedder = HashEmbedder(16)
    with sqlmem.open(path, embedder=embedder) as db:
        db.facts.index_many(_facts(8))
        before, _ = _version(path)
        conn = _client(path)
        conn.execute("INSERT INTO facts(id, content, created_at, updated_at)"
                     " VALUES ('x', 'written by hand', 1, 1)")  # fmt: skip
        blob = to_blob(embedder.embed(["written by hand"])[0])
        for _ in range(2):  # an insert, then an update of the same row
            conn.execute(
                "INSERT INTO fact_vectors(fact_pk, model, dim, content_hash, vector)"
                " SELECT pk, ?, 16, 'h', ? FROM facts WHERE id = 'x'"
                " ON CONFLICT(fact_pk) DO UPDATE SET vector = excluded.vector",
                (embedder.model, blob),
            )
        conn.close()
        assert _version(path)[0] - before == 2


@settings(max_examples=15, deadline=None)
@given(sizes=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=5))
def test_the_kept_matrix_follows_batches_of_any_size(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int]
) -> None:
    """Unfiltered vector search over the in-memory copy sees every batch written by this
    process and another connection, whatever its size."""
    path = tmp_path_factory.mktemp("matrix") / "m.db"
    embedder = HashEmbedder(64)
    old = sqlite_vectors.MATRIX_MIN_ROWS
    sqlite_vectors.MATRIX_MIN_ROWS = 1
    try:
        with (
            sqlmem.open(path, embedder=embedder) as db,
            sqlmem.open(path, embedder=embedder) as other,
        ):
            db.facts.index(Fact(id="seed", content="seed fact"))
            db.facts.search("seed fact", mode="vector", top_k=1)  # the matrix is kept
            for n, size in enumerate(sizes):
                writer = db if n % 2 else other
                batch = _facts(size, f"b{n}x")
                writer.facts.index_many(batch)
                last = batch[-1]
                top = db.facts.search(last.content, mode="vector", top_k=3)
                exact = {f.id for f in top if f.score == pytest.approx(1.0, abs=1e-6)}
                assert last.id in exact  # (or a text hashing alike: ties rank by pk)
            total = 1 + sum(sizes)
            assert len(db.facts.search("batch", mode="vector", top_k=total + 5)) == total
    finally:
        sqlite_vectors.MATRIX_MIN_ROWS = old


def test_identical_content_stored_earlier_is_not_embedded_again(tmp_path: Path) -> None:
    """The cache of vectors already in the file, for a store opened afresh (its
    in-process cache empty): exact content only, of the store's model."""
    path = tmp_path / "m.db"
    with sqlmem.open(path, embedder=CountingEmbedder()) as db:
        db.facts.index_many([Fact(id="a", content="Green tea, please"), *_facts(5)])
    again = CountingEmbedder()
    with sqlmem.open(path, embedder=again) as db:
        db.facts.index_many(
            [
                Fact(id="b", content="Green tea, please"),  # the same text: found stored
                Fact(id="c", content="green tea please"),  # same fingerprint, other text
            ]
        )
        assert again.texts == ["green tea please"]
        db.facts.index(Fact(id="a", content="something else now"))  # a's vector goes
        db.facts.index(Fact(id="d", content="Green tea, please"))  # b still holds it
        assert again.texts == ["green tea please", "something else now"]
        assert db.stats()["facts_without_vectors"] == 0
        best = db.facts.search("Green tea, please", mode="vector", top_k=3)
        assert {f.id for f in best} == {"b", "c", "d"}  # the hash embedder ignores case
        assert best[0].score == pytest.approx(1.0, abs=1e-6)
    other_model = CountingEmbedder(dim=8)  # another model: nothing stored is its
    with sqlmem.open(path, embedder=other_model) as db:
        db.facts.index(Fact(id="e", content="Green tea, please"))
        assert other_model.texts == ["Green tea, please"]


def test_the_cache_lookup_is_driven_by_the_fingerprint_index(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with sqlmem.open(path, embedder=HashEmbedder(16)) as db:
        db.facts.index_many(_facts(300))
    conn = _client(path)
    try:
        for analyzed in (False, True):
            if analyzed:
                conn.execute("ANALYZE")
            plan = [
                row[3]
                for row in conn.execute(
                    "EXPLAIN QUERY PLAN " + vectors_sql.STORED_BY_CONTENT,
                    {"prefixes": "[]", "texts": "[]", "model": "m"},
                )
            ]
            assert plan[0].startswith("SEARCH f USING INDEX facts_fingerprint"), plan
            assert any(p.startswith("SEARCH v USING INTEGER PRIMARY KEY") for p in plan), plan
            assert not any(p.startswith("SCAN f") or p.startswith("SCAN v") for p in plan)
        indexes = {
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'fact_vectors'"
            )
        }
        assert "fact_vectors_hash" not in indexes
    finally:
        conn.close()


def test_a_batch_larger_than_one_statement_writes_every_vector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors_sql, "UPSERT_CHUNK", 7)
    path = tmp_path / "m.db"
    with sqlmem.open(path, embedder=HashEmbedder(16)) as db:
        facts = _facts(30)
        db.facts.index_many(facts)
        assert db.stats()["facts_without_vectors"] == 0
        for fact in (facts[0], facts[7], facts[29]):
            assert db.facts.search(fact.content, mode="vector", top_k=1)[0].id == fact.id
        assert _version(path)[1] == 0
