"""SPEC 20: `atomic()` on a SQLite MemoryDB, on PostgreSQL and on `sqlmem.inmemory.open()`'s
twins.

Writes through any store inside a block commit together, or none do when it raises; nested
blocks are savepoints; reads inside see the block's writes; other threads wait for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sqlmem
import sqlmem.inmemory
from sqlmem import Fact, Message


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def mdb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        db: Any = sqlmem.inmemory.open()
    elif request.param == "postgres":  # a fresh agent of the session's server
        db = request.getfixturevalue("open_pg")()
    else:
        db = sqlmem.open(tmp_path / "memory.db")
    yield db
    db.close()


def _user(text: str) -> Message:
    return Message(role="user", content=text)


class Boom(Exception):
    pass


def test_writes_through_every_store_commit_together(mdb: Any) -> None:
    with mdb.atomic():
        mdb.history.append("s", _user("hello there"))
        mdb.history.set_summary("s", "a greeting")
        fact_id = mdb.facts.index(Fact(content="The user is vegetarian."))
        mdb.docs.write("MEMORY.md", "# Memory\n- vegetarian")
        assert mdb.docs.read("MEMORY.md").content == "# Memory\n- vegetarian"
    assert [m.content for m in mdb.history.get_all("s")] == ["hello there"]
    assert mdb.history.get_summary("s") == "a greeting"
    assert mdb.facts.get(fact_id) is not None
    assert mdb.docs.read("MEMORY.md").revision == 1


def test_documents_and_their_revisions_roll_back_with_the_block(mdb: Any) -> None:
    mdb.docs.write("MEMORY.md", "v1")
    mdb.docs.write("MEMORY.md", "v2")
    with pytest.raises(Boom), mdb.atomic():
        mdb.docs.write("MEMORY.md", "v3")
        mdb.docs.append_daily("a note")
        mdb.docs.edit("MEMORY.md", "v3", "v4")
        raise Boom
    doc = mdb.docs.read("MEMORY.md")
    assert (doc.content, doc.revision) == ("v2", 2)
    assert [r.revision for r in mdb.docs.revisions("MEMORY.md")] == [1]
    assert mdb.docs.read_revision("MEMORY.md", 1) == "v1"
    assert [d.path for d in mdb.docs.list()] == ["MEMORY.md"]
    assert mdb.docs.search("note") == []


def test_an_exception_undoes_every_write_and_propagates(mdb: Any) -> None:
    mdb.history.append("s", _user("before"))
    kept = mdb.facts.index(Fact(content="kept fact"))
    with pytest.raises(Boom), mdb.atomic():
        mdb.history.append("s", _user("inside"))
        mdb.history.compact("s", keep_last=0, summary="summary inside")
        mdb.facts.index(Fact(id=kept, content="rewritten inside"))
        mdb.facts.index(Fact(content="new inside"))
        raise Boom
    assert [m.content for m in mdb.history.get_all("s")] == ["before"]
    assert mdb.history.count("s") == 1
    assert mdb.history.get_summary("s") == ""
    assert mdb.facts.count() == 1
    assert mdb.facts.get(kept).content == "kept fact"
    assert mdb.facts.search("inside") == []
    # the next append continues the numbering as if the block never happened
    assert mdb.history.append("s", _user("after")) == 2


def test_reads_inside_see_the_blocks_own_writes(mdb: Any) -> None:
    with mdb.atomic():
        mdb.history.append("s", _user("apples and pears"))
        fact_id = mdb.facts.index(Fact(content="The user grows apples", tags=["garden"]))
        assert mdb.history.count("s") == 1
        assert [m.content for m in mdb.history.get_recent("s", 5)] == ["apples and pears"]
        assert [m.content for m in mdb.history.search("apples")] == ["apples and pears"]
        assert mdb.facts.get(fact_id) is not None
        assert [f.id for f in mdb.facts.search("apples")] == [fact_id]
        assert [f.id for f in mdb.facts.search("apples grows", mode="all")] == [fact_id]
        assert mdb.facts.tags() == {"garden": 1}
        assert len(mdb.facts) == 1


def test_nested_blocks_are_savepoints(mdb: Any) -> None:
    with mdb.atomic():
        mdb.history.append("s", _user("outer one"))
        with pytest.raises(Boom), mdb.atomic():
            mdb.history.append("s", _user("inner"))
            mdb.facts.index(Fact(content="inner fact"))
            raise Boom
        with mdb.atomic():
            mdb.history.append("s", _user("inner kept"))
        mdb.history.append("s", _user("outer two"))
    assert [m.content for m in mdb.history.get_all("s")] == [
        "outer one",
        "inner kept",
        "outer two",
    ]
    assert mdb.facts.count() == 0


def test_an_outer_failure_undoes_committed_inner_blocks(mdb: Any) -> None:
    with pytest.raises(Boom), mdb.atomic():
        with mdb.atomic():
            mdb.facts.index(Fact(content="inner fact"))
        raise Boom
    assert mdb.facts.count() == 0


def test_a_refused_write_inside_undoes_the_block_when_it_propagates(mdb: Any) -> None:
    with pytest.raises(sqlmem.InvalidArgumentError), mdb.atomic():
        mdb.history.append("s", _user("first"))
        mdb.history.append("", _user("bad session id"))
    assert mdb.history.count("s") == 0


def test_other_threads_wait_for_the_block(mdb: Any) -> None:
    started, done = threading.Event(), threading.Event()
    seen: list[int] = []

    def other() -> None:
        started.set()
        mdb.history.append("s", _user("from the other thread"))
        seen.append(mdb.history.count("s"))
        done.set()

    with mdb.atomic():
        mdb.history.append("s", _user("one"))
        thread = threading.Thread(target=other)
        thread.start()
        assert started.wait(10)
        # The other thread's write cannot land while the block holds the writer.
        assert not done.wait(0.2)
        mdb.history.append("s", _user("two"))
    thread.join(10)
    assert done.is_set()
    assert seen == [3]
    assert [m.content for m in mdb.history.get_all("s")][:2] == ["one", "two"]


# -- SQLite only: other connections, processes and maintenance ------------------------------


def test_another_connection_waits_then_gets_storage_busy(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with (
        sqlmem.open(path) as db,
        sqlmem.open(path, sqlmem.StoreConfig(busy_timeout_ms=100)) as other,
    ):
        with db.atomic():
            db.history.append("s", _user("held"))
            with pytest.raises(sqlmem.StorageBusyError):
                other.history.append("s", _user("refused"))
            # the other connection reads the last committed state, not the block's
            assert other.history.count("s") == 0
        assert other.history.count("s") == 1


def test_maintenance_inside_a_block_is_refused_with_a_sqlmem_error(tmp_path: Path) -> None:
    with sqlmem.open(tmp_path / "memory.db") as db, db.atomic():
        db.history.append("s", _user("x"))
        with pytest.raises(sqlmem.SqlmemError):
            db.vacuum()
        with pytest.raises(sqlmem.SqlmemError):
            db.checkpoint()


_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import sqlmem
    db = sqlmem.open(sys.argv[1])
    db.history.append("s", sqlmem.Message(role="user", content="committed"))
    with db.atomic():
        db.history.append("s", sqlmem.Message(role="user", content="in the block"))
        db.facts.index(sqlmem.Fact(content="fact in the block"))
        os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_a_process_killed_inside_a_block_leaves_none_of_it(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(path)], timeout=60, env={**os.environ})
    assert proc.returncode == -9
    with sqlmem.open(path) as db:
        assert [m.content for m in db.history.get_all("s")] == ["committed"]
        assert db.facts.count() == 0
        assert db.check().ok
