"""The SQLite history store, the in-memory twin and PostgreSQL agree on history search by
meaning: random conversations (several sessions, tool-call-only turns, pops, a purge,
repeated texts), then vector and hybrid searches with and without a session filter.

Vector: SQLite and the twin rank equal cosines by insertion, so they agree exactly (up to
float rounding); PostgreSQL has no insertion order for messages and ranks equal cosines
by (session, seq), so against it the lists agree up to ties. Hybrid: BM25 itself orders
equal scores differently between backends (as "any" search may), so the fused lists are
compared as sets at a depth that holds every match, and each backend's hybrid list is
checked to be the fusion of its own two legs, each message lifted by its neighbours
(`hybrid_oracle`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hybrid_oracle import expected_hybrid
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem import Message, ToolCall
from sqlmem.embedders import HashEmbedder
from sqlmem.inmemory.history import InMemoryHistoryStore
from sqlmem.search.vectors import hybrid_leg_size

WORDS = ["red", "green", "tea", "apple", "car", "sea", "sky", "blue", "fast", "slow"]

turns = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.one_of(st.none(), st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)),
    ),
    min_size=1,
    max_size=14,
)


def _message(words: list[str] | None) -> Message:
    if words is None:  # a tool call alone: no text, no vector
        return Message(role="assistant", tool_calls=[ToolCall(id="1", name="f", arguments="{}")])
    return Message(role="user", content=" ".join(words))


def _play(stores: Sequence[Any], plan: list[tuple[str, list[str] | None]], pops: int) -> None:
    for i, (session, words) in enumerate(plan):
        for store in stores:
            if i % 3 == 2:  # some turns go in as batches of one
                store.append_many(session, [_message(words)])
            else:
                store.append(session, _message(words))
    for session in ("a", "b", "c")[:pops]:
        for store in stores:
            store.pop(session)


def _keys(found: Sequence[Message]) -> list[tuple[str | None, int | None]]:
    return [(m.session_id, m.seq) for m in found]


def _agree_up_to_ties(a: Sequence[Message], b: Sequence[Message]) -> None:
    assert [m.score for m in a] == pytest.approx([m.score for m in b], abs=1e-6)
    groups: dict[float, tuple[set[Any], set[Any]]] = {}
    for side, found in enumerate((a, b)):
        for m in found:
            groups.setdefault(round(m.score or 0.0, 5), (set(), set()))[side].add(
                (m.session_id, m.seq)
            )
    last = round(a[-1].score or 0.0, 5) if a else None
    for score, (left, right) in groups.items():
        if score != last:  # the last group may be cut at top_k differently
            assert left == right


def _fused_from_own_legs(store: Any, query: str, session: str | None, top_k: int) -> None:
    depth = hybrid_leg_size(top_k)
    lexical = store.search(query, session_id=session, top_k=depth)
    semantic = store.search(query, session_id=session, top_k=depth, mode="vector")
    want = expected_hybrid(_keys(lexical), _keys(semantic), top_k)
    got = store.search(query, session_id=session, top_k=top_k, mode="hybrid")
    assert _keys(got) == [key for key, _ in want]
    assert [m.score for m in got] == pytest.approx([s for _, s in want])


def _compare(first: Any, other: Any, query: str, top_k: int, *, exact: bool, purge: bool) -> None:
    for session in (None, "a", "b"):
        a = first.search(query, session_id=session, top_k=top_k, mode="vector")
        b = other.search(query, session_id=session, top_k=top_k, mode="vector")
        if exact:
            assert _keys(a) == _keys(b)
            assert [m.score for m in a] == pytest.approx([m.score for m in b], abs=1e-6)
        else:
            _agree_up_to_ties(a, b)
        everything = {"top_k": 100, "session_id": session, "mode": "hybrid"}
        assert set(_keys(first.search(query, **everything))) == set(
            _keys(other.search(query, **everything))
        )
        for store in (first, other):
            _fused_from_own_legs(store, query, session, top_k)
    if purge:
        for store in (first, other):
            store.purge("a")
        _compare(first, other, query, top_k, exact=exact, purge=False)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns,
    st.integers(0, 2),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.integers(1, 6),
    st.booleans(),
)
def test_sqlite_and_the_twin_agree(
    tmp_path_factory: pytest.TempPathFactory,
    plan: list[tuple[str, list[str] | None]],
    pops: int,
    query: list[str],
    top_k: int,
    purge: bool,
) -> None:
    embedder = HashEmbedder(16)
    twin = InMemoryHistoryStore(embedder=embedder)
    with sqlmem.open(tmp_path_factory.mktemp("agree") / "m.db", embedder=embedder) as db:
        _play([db.history, twin], plan, pops)
        _compare(db.history, twin, " ".join(query), top_k, exact=True, purge=purge)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns,
    st.integers(0, 2),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.integers(1, 6),
    st.booleans(),
)
def test_postgres_and_the_twin_agree(
    pg_dsn: str,
    plan: list[tuple[str, list[str] | None]],
    pops: int,
    query: list[str],
    top_k: int,
    purge: bool,
) -> None:
    from pgserver import new_agent_id

    from sqlmem import postgres

    embedder = HashEmbedder(16)
    twin = InMemoryHistoryStore(embedder=embedder)
    with postgres.open(pg_dsn, new_agent_id(), embedder=embedder, pool_size=1) as pg:
        _play([pg.history, twin], plan, pops)
        _compare(pg.history, twin, " ".join(query), top_k, exact=False, purge=purge)
