"""Facts written inside `atomic()` are embedded after the block commits, never while it
holds the write lock (SQLite), keeps its transaction open (PostgreSQL) or holds the twins'
lock (`sqlmem.inmemory.open()`).

Regression: `facts.index`, `index_many` and `remember` inside `atomic()` called the
embedder with the block's lock held, so every other writer of the file (or of the
agent's rows) waited out the model. The probe embedder below, each time it is called,
has another thread write through a second handle (busy timeout 0; on the twin, the same
object) and read the block's facts through it: both only work once the block has
committed and let go.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy.typing as npt
import pytest

import sqlmem
from sqlmem import Fact, Message, StorageBusyError, StoreConfig
from sqlmem.embedders import HashEmbedder


class LockProbe:
    """An embedder that records, at each call, whether another handle could write and
    could see the facts this one wrote (`other` is set by the test)."""

    def __init__(self) -> None:
        self.inner = HashEmbedder(64)
        self.model = self.inner.model
        self.other: Any = None
        self.seen: list[tuple[list[str], bool, int]] = []  # (texts, could write, facts seen)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[Any]:
        found: dict[str, Any] = {}

        def meanwhile() -> None:
            try:
                # a document: no embedding of its own (a message would ask this probe again)
                self.other.docs.append("probe.md", "meanwhile")
                found["wrote"] = True
            except StorageBusyError:
                found["wrote"] = False
            found["count"] = self.other.facts.count()

        thread = threading.Thread(target=meanwhile)
        thread.start()
        thread.join(5)  # still blocked after that: the lock is held by the caller
        self.seen.append((list(texts), found.get("wrote", False), found.get("count", -1)))
        return self.inner.embed(texts)


Pair = Callable[[], tuple[Any, Any, LockProbe]]


@pytest.fixture(params=["sqlite", "postgres", "memory"])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Pair]:
    """`pair()`: (a database with the probe embedder, a second handle on the same data
    with busy_timeout_ms=0, the probe)."""
    opened: list[Any] = []

    def make() -> tuple[Any, Any, LockProbe]:
        probe = LockProbe()
        if request.param == "postgres":
            from pgserver import new_agent_id

            from sqlmem import postgres

            dsn, agent = request.getfixturevalue("pg_dsn"), new_agent_id()
            db = postgres.open(dsn, agent, embedder=probe, pool_size=2)
            other = postgres.open(dsn, agent, StoreConfig(busy_timeout_ms=0), pool_size=2)
        elif request.param == "memory":  # one object: its lock is what a block holds
            db = other = sqlmem.inmemory.open(embedder=probe)
        else:
            path = tmp_path / f"m{len(opened)}.db"
            db = sqlmem.open(path, embedder=probe)
            other = sqlmem.open(path, StoreConfig(busy_timeout_ms=0))
        opened.extend([db, other])
        probe.other = other
        return db, other, probe

    yield make
    for db in opened:
        db.close()


def test_writes_inside_atomic_embed_after_the_block_commits(pair: Pair) -> None:
    db, _, probe = pair()
    with db.atomic():
        db.facts.index(Fact(id="a", content="red apples"))
        db.facts.index_many([Fact(id="b", content="green pears"), Fact(id="c", content="sky")])
        remembered = db.facts.remember(Fact(content="yellow bananas"))
        db.history.append("s", Message(role="user", content="in the block"))
        assert probe.seen == []  # no model ran inside the block
    assert probe.seen, "the facts were never embedded"
    assert all(could_write for _, could_write, _ in probe.seen), probe.seen
    assert all(count == 4 for _, _, count in probe.seen), probe.seen  # committed first
    seen = sorted(t for texts, _, _ in probe.seen for t in texts)
    facts_seen = [t for t in seen if not t.endswith("in the block")]
    assert facts_seen == sorted(["red apples", "green pears", "sky", "yellow bananas"])
    # the message appended in the block: its vector too came after the commit
    assert [t for t in seen if t.endswith("): in the block")], seen
    assert db.history.embed_pending() == 0
    assert db.facts.embed_pending() == 0  # every vector is there
    expected = [("a", "red apples"), ("b", "green pears"), (remembered, "yellow bananas")]
    for fact_id, text in expected:
        best = db.facts.search(text, mode="vector", top_k=1)[0]
        assert best.id == fact_id and best.score == pytest.approx(1.0, abs=1e-6)


def test_a_rolled_back_block_runs_no_model_and_keeps_nothing(pair: Pair) -> None:
    db, _, probe = pair()
    with pytest.raises(RuntimeError), db.atomic():
        db.facts.index(Fact(id="a", content="red apples"))
        raise RuntimeError("the caller changed its mind")
    assert probe.seen == [] and db.facts.count() == 0


def test_the_vector_follows_the_content_the_block_left(pair: Pair) -> None:
    db, _, probe = pair()
    with db.atomic():
        db.facts.index(Fact(id="a", content="first words"))
        with db.atomic():  # nested: a savepoint
            db.facts.index(Fact(id="a", content="second words"))
        db.facts.index(Fact(id="gone", content="deleted before the end"))
        db.facts.delete("gone")
    assert db.facts.embed_pending() == 0
    best = db.facts.search("second words", mode="vector", top_k=1)[0]
    assert best.id == "a" and best.score == pytest.approx(1.0, abs=1e-6)
    assert db.facts.search("first words", mode="vector", top_k=1)[0].score < 0.99
    assert all(c == 1 for _, _, c in probe.seen)  # only "a" was there each time


def test_known_content_gets_its_vector_inside_the_block_without_the_model(pair: Pair) -> None:
    db, _, probe = pair()
    db.facts.index(Fact(id="a", content="same words"))
    calls = len(probe.seen)
    with db.atomic():
        db.facts.index(Fact(id="b", content="same words"))  # cached: no model needed
        assert [f.id for f in db.facts.search("same words", mode="vector", top_k=5)] != []
    assert len(probe.seen) == calls  # the cache served the fact and the query alike
    assert db.facts.embed_pending() == 0


def test_a_failing_embedder_after_the_block_keeps_the_facts(
    pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    db, _, probe = pair()

    def broken(texts: Sequence[str]) -> Any:
        raise ConnectionError("embedding API down")

    probe.embed = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="sqlmem"), db.atomic():
        db.facts.index(Fact(id="a", content="red apples"))
    assert db.facts.count() == 1 and "stored without vectors" in caplog.text


@pytest.mark.parametrize("backend", ["sqlite", "memory"])
def test_appends_inside_atomic_without_an_embedder_need_no_vectors(
    backend: str, tmp_path: Path
) -> None:
    """Regression: the in-memory database scheduled a vector fill after a block that had
    appended a message, with no embedder to fill it with, and the block's end raised."""
    db: Any = sqlmem.inmemory.open() if backend == "memory" else sqlmem.open(tmp_path / "m.db")
    with db:
        with db.atomic():
            db.history.append("s", Message(role="user", content="in the block"))
        assert [m.content for m in db.history.get_all("s")] == ["in the block"]
