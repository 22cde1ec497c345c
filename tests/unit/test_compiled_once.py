"""Hot read statements are compiled once per connection, not at every call.

SQLite compiles a statement again whenever a value its plan looked at is bound (a bare
LIMIT parameter, a value compared with an indexed column before an ORDER BY, FTS5's own
per-word lookup in each index segment), which cost get_recent ~13 µs of ~30 and a
search of 10,000 facts about a third of its time. An authorizer runs only while SQL is
being compiled, so one installed on every connection of the store tells whether a call
compiled anything. (A filtered search, or one while superseded or expired facts are
stored, orders by FTS5's `rank`, whose sorted mode compiles a statement of FTS5's own per
query: that shape is left out here.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import apsw
import pytest

import sqlmem
from sqlmem import Fact, Message

OpenDB = Callable[..., sqlmem.MemoryDB]


@contextmanager
def _compiles(db: sqlmem.MemoryDB) -> Iterator[list[str]]:
    """What gets compiled (authorizer calls) on the store's connections meanwhile.

    Installing an authorizer expires the prepared statements, so the caller warms up
    every call once inside the block, then clears the list."""
    engine = db._engine
    with engine.read():  # at least one reader exists
        pass
    assert engine._readers is not None and engine._writer is not None
    conns = [*engine._readers.idle_connections(), engine._writer.connection]
    seen: list[str] = []

    def authorizer(code: int, a: str | None, b: str | None, *_: Any) -> int:
        seen.append(f"{code} {a} {b}")
        return apsw.SQLITE_OK

    for conn in conns:
        conn.authorizer = authorizer
    try:
        yield seen
    finally:
        for conn in conns:
            conn.authorizer = None


def _store(open_db: OpenDB, *, analyzed: bool) -> sqlmem.MemoryDB:
    db = open_db()
    db.history.append_many(
        "s", [Message(role="user", content=f"message {i} about cats") for i in range(120)]
    )
    db.facts.index_many(
        [
            Fact(content=f"fact {i} about cats and dogs", tags=[f"t{i % 5}"],
                 metadata={"n": i % 7}, key=f"k{i}" if i < 3 else "")
            for i in range(300)
        ]
    )  # fmt: skip
    if analyzed:  # statistics as PRAGMA optimize leaves them at close
        with db._engine.write() as conn:
            conn.execute("ANALYZE")
    return db


CALLS: dict[str, Callable[[sqlmem.MemoryDB, int], object]] = {
    "get_recent": lambda db, i: db.history.get_recent("s", 5 + i),
    "around": lambda db, i: db.history.around("s", 50 + i, before=2 + i, after=1 + i),
    "search all": lambda db, i: db.facts.search("cats dogs", 3 + i, mode="all"),
    "search any": lambda db, i: db.facts.search("cats dogs", 3 + i, mode="any"),
    "history search": lambda db, i: db.history.search("cats", top_k=3 + i),
    "search_by_metadata limited": lambda db, i: db.facts.search_by_metadata("n", 3, limit=2 + i),
    "list": lambda db, i: db.facts.list(limit=4 + i, offset=i),
    "list by tag": lambda db, i: db.facts.list(tags=["t1"], limit=4 + i),
    "history of a key": lambda db, i: db.facts.history(key="k1"),
}


@pytest.mark.parametrize("analyzed", [False, True], ids=["fresh", "analyzed"])
@pytest.mark.parametrize("name", list(CALLS))
def test_repeated_reads_compile_nothing(open_db: OpenDB, name: str, analyzed: bool) -> None:
    db = _store(open_db, analyzed=analyzed)
    call = CALLS[name]
    with _compiles(db) as seen:
        call(db, 0)  # compiled here (the authorizer expired every statement)
        seen.clear()
        for i in range(1, 4):  # other bound values each time
            call(db, i)
    assert seen == [], f"{name} compiled SQL again: {seen[:5]}"


def test_reads_still_answer_right_after_the_change(open_db: OpenDB) -> None:
    """The same values as before: limits, offsets and windows are still applied."""
    db = _store(open_db, analyzed=True)
    assert [m.seq for m in db.history.get_recent("s", 3)] == [118, 119, 120]
    assert [m.seq for m in db.history.around("s", 50, before=2, after=1)] == [48, 49, 50, 51]
    assert len(db.facts.list(limit=7, offset=2)) == 7
    newest = db.facts.search_by_metadata("n", 3, limit=2)
    assert [f.content for f in newest] == [f"fact {i} about cats and dogs" for i in (297, 290)]
    assert len(db.facts.search("cats dogs", 4, mode="all")) == 4
