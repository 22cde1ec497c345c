"""Vector search filtered by tags alone: the tagged facts' vectors are read without the
facts' rows while no stored fact is hidden, and the answer is the same as the twin's
whatever is hidden, superseded or left behind by a plain SQLite client.

Why: reading each candidate's facts row only to test visibility doubled the cost of a
2% tag filter; the shortcut must not change a single result."""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem.embedders import HashEmbedder
from sqlmem.sqlite.stores import vectors_sql

TAGS = ("red", "green", "blue", "grey")
_PAST = datetime.now(UTC) - timedelta(days=1)


def _facts(tag_sets: list[list[str]], expired: list[bool]) -> list[sqlmem.Fact]:
    return [
        sqlmem.Fact(
            id=f"f{i}",
            content=f"note {i} about {' '.join(tags) or 'nothing'} number {i * 7}",
            tags=tags,
            expires_at=_PAST if gone else None,
        )
        for i, (tags, gone) in enumerate(zip(tag_sets, expired, strict=True))
    ]


def _ids(found: list[sqlmem.Fact]) -> list[str]:
    return [fact.id for fact in found]


@settings(max_examples=40, deadline=None)
@given(
    tag_sets=st.lists(
        st.lists(st.sampled_from(TAGS), max_size=3, unique=True), min_size=1, max_size=30
    ),
    wanted=st.lists(st.sampled_from(TAGS), min_size=1, max_size=2, unique=True),
    data=st.data(),
)
def test_tag_filtered_vector_search_agrees_with_the_twin(
    tag_sets: list[list[str]], wanted: list[str], data: st.DataObject
) -> None:
    expired = data.draw(st.lists(st.booleans(), min_size=len(tag_sets), max_size=len(tag_sets)))
    facts = _facts(tag_sets, expired)
    embedder = HashEmbedder(32)
    twin = sqlmem.open(":memory:", embedder=embedder)
    twin.facts.index_many(facts)
    with tempfile.TemporaryDirectory() as folder:
        db = sqlmem.open(Path(folder) / "m.db", embedder=embedder)
        try:
            db.facts.index_many(facts)
            for query, mode in (("note about red", "vector"), ("blue number 7", "hybrid")):
                got = db.facts.search(query, 5, mode=mode, tags=wanted)
                expected = twin.facts.search(query, 5, mode=mode, tags=wanted)
                assert _ids(got) == _ids(expected)
                assert all(set(wanted) <= set(f.tags) for f in got)
        finally:
            db.close()
    twin.close()


def test_superseded_facts_stay_out_of_a_tag_filtered_search(tmp_path: Path) -> None:
    with sqlmem.open(tmp_path / "m.db", embedder=HashEmbedder(32)) as db:
        db.facts.index(sqlmem.Fact(id="old", content="the door code is 1234", tags=["home"]))
        db.facts.supersede("old", sqlmem.Fact(id="new", content="door code 5678", tags=["home"]))
        found = db.facts.search("door code", 5, mode="vector", tags=["home"])
        assert _ids(found) == ["new"]


def test_vectors_left_behind_by_a_plain_client_are_not_ranked(tmp_path: Path) -> None:
    """A client without foreign keys deletes a fact; its tag and vector rows stay. The
    search still answers with facts only (it falls back to the statement reading facts)."""
    path = tmp_path / "m.db"
    with sqlmem.open(path, embedder=HashEmbedder(32)) as db:
        db.facts.index_many(
            [sqlmem.Fact(id=f"f{i}", content=f"apples {i}", tags=["fruit"]) for i in range(4)]
        )
    plain = sqlite3.connect(path)  # foreign keys off: no cascade
    plain.execute("DELETE FROM facts WHERE id = 'f2'")
    plain.commit()
    left = plain.execute(
        "SELECT count(*) FROM fact_vectors WHERE fact_pk NOT IN (SELECT pk FROM facts)"
    ).fetchone()[0]
    plain.close()
    with sqlmem.open(path, embedder=HashEmbedder(32)) as db:
        found = db.facts.search("apples 2", 10, mode="vector", tags=["fruit"])
        assert sorted(_ids(found)) == ["f0", "f1", "f3"]
    assert left == 1  # the case this test is about is really there


def test_the_tags_only_statement_never_reads_facts(tmp_path: Path) -> None:
    """The plan of the tags-only statement: fact_tags by its index, then each vector by
    its key; no facts row, no scan of every vector."""
    path = tmp_path / "m.db"
    sqlmem.open(path).close()
    plain = sqlite3.connect(path)
    plan = " | ".join(
        row[3]
        for row in plain.execute(
            "EXPLAIN QUERY PLAN " + vectors_sql.TAGGED_CANDIDATES,
            {"tags": '["a"]', "ntags": 1, "model": "m", "dim": 3},
        )
    )
    plain.close()
    steps = plan.split(" | ")
    assert not [step for step in steps if step.startswith(("SEARCH f ", "SCAN f ", "SCAN v"))]
    assert "SEARCH d USING PRIMARY KEY (tag=?)" in steps
    assert "SEARCH v USING INTEGER PRIMARY KEY (rowid=?)" in steps
