"""Hostile input on PostgreSQL (issue 21): SQL is always bound, under a statement trace.

Every text a user controls (session ids, contents, fact ids, tags, sources, metadata keys
and values, queries) carries a marker; every statement psycopg sends is recorded, and no
statement text may contain the marker: values travel as parameters only. The values come
back equal, and a neighbour agent never sees them (agent isolation under hypothesis).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pgserver import new_agent_id

from sqlmem.records import Fact, Message

MARK = "zq9mark"
HOSTILE = [
    f"'); DROP TABLE facts; -- {MARK}",
    f"{MARK}' OR '1'='1",
    f"{MARK} \\x00 \x00 nul",
    f"{MARK} $1 %s %(agent)s {{}}",
    f"{MARK}:* & | ! <-> '\\'",
    f'"{MARK}" AND NOT NEAR(a b)',
    f"{MARK} 跑步 😀 \ue000",
]


@pytest.fixture
def trace(monkeypatch: pytest.MonkeyPatch, pg_backend: Any) -> Iterator[list[str]]:
    """Every statement text sent through psycopg while the test runs (the migrations, run
    once per backend, before it: what is counted is the stores' own statements)."""
    pg_backend.open(new_agent_id()).close()
    seen: list[str] = []
    execute, executemany = psycopg.Cursor.execute, psycopg.Cursor.executemany

    def text(query: Any) -> str:
        return query.decode() if isinstance(query, bytes) else str(query)

    def traced_execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(text(query))
        return execute(self, query, *args, **kwargs)

    def traced_executemany(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(text(query))
        return executemany(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", traced_execute)
    monkeypatch.setattr(psycopg.Cursor, "executemany", traced_executemany)
    yield seen


def test_hostile_values_are_bound_and_come_back(open_pg: Any, trace: list[str]) -> None:
    db, neighbour = open_pg(), open_pg()
    for i, value in enumerate(HOSTILE):
        session = f"s{i}{value}"
        db.history.append(session, Message(role="user", content=value, name=value,
                                           metadata={value: value}))  # fmt: skip
        db.history.set_summary(session, value)
        db.facts.index(Fact(id=value, content=value, source=value, tags=[value],
                            metadata={value: value}))  # fmt: skip
        assert db.history.get_all(session)[0].content == value
        assert [m.content for m in db.history.search(value, session_id=session)] == [value]
        assert db.history.get_summary(session) == value
        assert db.facts.search(value, mode="all", tags=[value], source=value,
                               metadata={value: value})[0].id == value  # fmt: skip
        assert [f.id for f in db.facts.search_by_metadata(value, value)] == [value]
        assert neighbour.facts.get(value) is None and neighbour.history.count(session) == 0
        assert neighbour.facts.search(value) == [] and neighbour.history.search(value) == []
    db.facts.delete_many(HOSTILE)
    for session in db.history.sessions():
        db.history.compact(session, 0, MARK)
        db.history.purge(session)
    assert db.facts.count() == 0 and db.history.sessions() == []
    assert trace, "the trace saw no statement"
    assert not [q for q in trace if MARK in q]
    assert len(set(trace)) < 40  # constant texts: a few per kind of call


def test_hostile_values_in_the_0_2_calls_are_bound(open_pg: Any, trace: list[str]) -> None:
    """remember, promote, pop, around and the metadata operators, under the same trace."""
    db, neighbour = open_pg(), open_pg()
    for i, value in enumerate(HOSTILE):
        session = f"s{i}{value}"
        db.history.append_many(session, [Message(role="user", content=value)] * 3)
        assert [m.content for m in db.history.around(session, 2, before=1)] == [value] * 3
        popped = db.history.pop(session)
        assert popped is not None and popped.content == value and popped.seq == 3
        assert len(db.history.get_recent(session, 5, pair_safe=False)) == 2
        assert neighbour.history.pop(session) is None
        fact_id = db.facts.remember(Fact(content=value, tags=[value], metadata={value: i}))
        assert db.facts.remember(Fact(content=value, references=[value])) == fact_id
        assert db.facts.promote(fact_id, "procedural").layer == "procedural"
        for expr in ({"$gte": i}, {"$in": [i, value]}, {"$exists": True, "$ne": value}):
            found = db.facts.list(metadata={value: expr}, layer="procedural")
            assert [f.id for f in found] == [fact_id]
            assert neighbour.facts.list(metadata={value: expr}) == []
        assert [f.id for f in db.facts.list(metadata={value: {"$lt": value}})] == []
    oldest_first = [f.id for f in reversed(db.facts.list(limit=100))]
    assert len(oldest_first) == len(HOSTILE)
    assert db.facts.promote_eligible(from_layer="procedural", min_hits=2) == oldest_first
    assert db.facts.expire() == 0 and neighbour.facts.count() == 0
    assert trace, "the trace saw no statement"
    assert not [q for q in trace if MARK in q]


@settings(max_examples=40, deadline=None)
@given(
    session=st.text(min_size=1, max_size=20),
    content=st.text(max_size=40),
    query=st.text(max_size=20),
)
def test_agents_never_see_each_other(open_pg: Any, session: str, content: str, query: str) -> None:
    """Whatever two agents write under the same names, each reads only its own rows."""
    if any(0xD800 <= ord(c) <= 0xDFFF for c in session + content):
        return  # lone surrogates are refused before anything is stored (tested elsewhere)
    a, b = open_pg(), open_pg()
    a.history.append(session, Message(role="user", content=content))
    a.facts.index(Fact(id=session, content=content + " x"))
    assert b.history.sessions() == [] and b.history.count(session) == 0
    assert b.facts.get(session) is None and b.facts.count() == 0
    assert b.history.search(query) == [] and b.facts.search(query) == []
    b.history.append(session, Message(role="user", content="b's"))
    assert a.history.count(session) == 1 and b.history.count(session) == 1
    assert a.history.get_all(session)[0].content == content
