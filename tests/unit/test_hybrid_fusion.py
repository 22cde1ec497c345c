"""SQLite's hybrid search (`sqlite.vectors_hybrid`: both legs in one snapshot, fused on ids,
full rows for the top_k only) returns exactly what SPEC 17 defines: the shared rule
`rules.hybrid.fuse` over the store's own "any" and "vector" searches `max(4k, 50)` deep,
under the same filters, with expired facts, ties and the in-memory matrix."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmem
import sqlmem.sqlite.stores.vectors as sqlite_vectors
from sqlmem import Fact
from sqlmem.embedders import HashEmbedder
from sqlmem.rules.hybrid import fuse
from sqlmem.search.vectors import hybrid_leg_size

WORDS = ["apple", "pear", "plum", "kiwi", "fig", "lime", "date", "yam"]
PAST = datetime.now(timezone.utc) - timedelta(days=1)


def _expected(db: Any, query: str, top_k: int, filters: dict[str, Any]) -> list[Fact]:
    depth = hybrid_leg_size(top_k)
    lexical = db.facts.search(query, depth, mode="any", **filters)
    semantic = db.facts.search(query, depth, mode="vector", **filters)
    return fuse(lexical, semantic, top_k)


@pytest.mark.parametrize("matrix", [False, True], ids=["read", "kept-matrix"])
@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), min_size=1, max_size=80
    ),
    expired=st.sets(st.integers(0, 79), max_size=10),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    top_k=st.integers(1, 15),
)
def test_hybrid_is_the_fusion_of_the_two_searches(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    matrix: bool,
    texts: list[list[str]],
    expired: set[int],
    query: list[str],
    top_k: int,
) -> None:
    monkeypatch.setattr(sqlite_vectors, "MATRIX_MIN_ROWS", 1 if matrix else 10**9)
    path: Path = tmp_path_factory.mktemp("hybrid") / "m.db"
    with sqlmem.open(path, embedder=HashEmbedder(8)) as db:
        db.facts.index_many(
            Fact(
                id=f"f{i}",
                content=" ".join(words),
                tags=[words[0]],
                category="even" if i % 2 == 0 else "odd",
                expires_at=PAST if i in expired else None,
            )
            for i, words in enumerate(texts)
        )
        q = " ".join(query)
        for filters in ({}, {"tags": [query[0]]}, {"category": "even"}):
            got = db.facts.search(q, top_k, mode="hybrid", **filters)
            want = _expected(db, q, top_k, filters)
            assert [f.model_dump() for f in got] == [f.model_dump() for f in want]
            assert not {f.id for f in got} & {f"f{i}" for i in expired}
