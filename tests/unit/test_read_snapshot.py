"""`Engine.snapshot()`: the statements of one read see the file in one state.

A fact search reads whether any fact is hidden (expired, superseded, not valid yet) and
then searches in the shape that answer calls for; before, each statement was a read
transaction of its own, so a write committed in between could slip a superseded fact
into an unfiltered search.
"""

from __future__ import annotations

from collections.abc import Callable

import apsw
import pytest

import sqlmem
from sqlmem import Fact

OpenDB = Callable[..., sqlmem.MemoryDB]


def _count(conn: apsw.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM facts").fetchall()[0][0])


def test_a_write_committed_meanwhile_is_not_seen(open_db: OpenDB) -> None:
    db = open_db()
    db.facts.index(Fact(id="a", content="first"))
    with db._engine.snapshot() as conn:
        before = _count(conn)
        db.facts.index(Fact(id="b", content="second"))  # the writer commits meanwhile
        assert _count(conn) == before == 1
    with db._engine.snapshot() as conn:
        assert _count(conn) == 2


def test_plain_reads_are_one_statement_each(open_db: OpenDB) -> None:
    """`read()` is unchanged: each statement sees the latest commit."""
    db = open_db()
    db.facts.index(Fact(id="a", content="first"))
    with db._engine.read() as conn:
        assert _count(conn) == 1
        db.facts.index(Fact(id="b", content="second"))
        assert _count(conn) == 2


def test_the_reader_goes_back_to_the_pool_without_its_transaction(open_db: OpenDB) -> None:
    db = open_db()
    db.facts.index(Fact(id="a", content="first"))
    with pytest.raises(ZeroDivisionError), db._engine.snapshot() as conn:
        _count(conn)
        raise ZeroDivisionError
    readers = db._engine._readers
    assert readers is not None
    idle = readers.idle_connections()
    assert idle and not any(c.in_transaction for c in idle)
    db.facts.index(Fact(id="b", content="second"))
    assert db.facts.count() == 2  # no reader holds an old snapshot


def test_inside_atomic_the_writer_connection_is_used_as_it_is(open_db: OpenDB) -> None:
    db = open_db()
    with db.atomic():
        db.facts.index(Fact(id="a", content="apples and pears"))
        # the search runs in our own write transaction and sees its uncommitted fact
        assert [f.id for f in db.facts.search("apples", mode="all")] == ["a"]
    assert [f.id for f in db.facts.search("pears", mode="any")] == ["a"]


def test_search_skips_a_fact_superseded_in_the_same_store(open_db: OpenDB) -> None:
    db = open_db()
    db.facts.remember(Fact(content="the user lives in Lisbon", key="user.city"))
    db.facts.remember(Fact(content="the user lives in Porto", key="user.city"))
    found = db.facts.search("user lives", mode="all")
    assert [f.content for f in found] == ["the user lives in Porto"]
