"""`stats()["facts_without_vectors"]` counts the facts waiting for `embed_pending`: with no
embedder, none (0), on every backend that has `stats()`.

Regression: a store opened without an embedder reported every fact as without a vector,
so a BM25-only agent looked to monitoring as if all its memory were missing something.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem import Fact
from sqlmem.embedders import HashEmbedder

Opener = Callable[..., Any]


@pytest.fixture(params=["sqlite", "postgres"])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """`reopen(embedder=None)`: the same data (one file, or one agent) opened again."""
    opened: list[Any] = []
    if request.param == "postgres":
        from pgserver import new_agent_id

        from sqlmem import postgres

        dsn, agent = request.getfixturevalue("pg_dsn"), new_agent_id()

        def build(embedder: Any = None) -> Any:
            db = postgres.open(dsn, agent, embedder=embedder, pool_size=2)
            opened.append(db)
            return db
    else:

        def build(embedder: Any = None) -> Any:
            db = sqlmem.open(tmp_path / "memory.db", embedder=embedder)
            opened.append(db)
            return db

    yield build
    for db in opened:
        db.close()


def test_no_embedder_means_nothing_waits_for_a_vector(reopen: Opener) -> None:
    plain = reopen()
    plain.facts.index_many([Fact(content=f"fact number {i}") for i in range(3)])
    stats = plain.stats()
    assert stats["facts"] == 3 and stats["facts_without_vectors"] == 0
    plain.close()

    embedded = reopen(HashEmbedder(32))
    assert embedded.stats()["facts_without_vectors"] == 3  # now they wait for embed_pending
    assert embedded.facts.embed_pending() == 3
    assert embedded.stats()["facts_without_vectors"] == 0
    embedded.facts.index(Fact(content="one more"))
    embedded.close()

    again = reopen()
    assert again.stats()["facts_without_vectors"] == 0 and again.stats()["facts"] == 4
