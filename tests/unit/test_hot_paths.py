"""The hot paths made cheap for issue 8 keep their behaviour.

Each test pins one shortcut: the class-based engine context managers, the history read
plan, the unvalidated record builders, the query and tag caches, the ASCII fast paths.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

import sqlmem
from sqlmem import Fact, Message, ToolCall, history_sql, records
from sqlmem.query import compiler_for, segment

OpenDB = Callable[..., sqlmem.MemoryDB]


def _plan(db: sqlmem.MemoryDB, query: str, args: tuple[object, ...]) -> list[str]:
    with db._engine.read() as conn:
        return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + query, args)]


def test_get_recent_plan_survives_analyze_of_a_one_session_file(open_db: OpenDB) -> None:
    """Regression: the join form scanned sessions and sorted the whole session in a temp
    b-tree once ANALYZE (run by PRAGMA optimize at close) had seen a single session."""
    db = open_db()
    db.history.append_many("only", [Message(role="user", content=f"m{i}") for i in range(300)])
    with db._engine.write() as conn:
        conn.execute("ANALYZE")
    for query, args in [
        (history_sql.SELECT_RECENT, ("only", 50)),
        (history_sql.SELECT_ALL_ACTIVE, ("only",)),
        (history_sql.SELECT_ALL, ("only",)),
    ]:
        plan = _plan(db, query, args)
        assert any("sqlite_autoindex_messages_1 (session=?" in p for p in plan), plan
        assert not any(p.startswith("SCAN") or "TEMP B-TREE" in p for p in plan), plan
    got = db.history.get_recent("only", 50)
    assert [m.seq for m in got] == list(range(251, 301))


def test_unvalidated_builders_equal_model_construct() -> None:
    assert records._FAST  # the fast path is in use with this pydantic
    assert records._construct_ok()
    fact = records.build_fact("i", "c", "s", "a/b", '["t","u"]', '{"k":[1,{"x":null}]}', 5, 7)
    assert fact == Fact.model_construct(**fact.__dict__)
    assert fact.created_at == records.dt_from_ms(5) and fact.updated_at == records.dt_from_ms(7)
    message = records.message_from_values(
        {
            "role": "tool",
            "content": "c",
            "name": "n",
            "tool_call_id": "x",
            "tool_calls": [],
            "is_error": True,
            "metadata": {},
            "created_at": None,
            "seq": 1,
            "session_id": "s",
            "score": None,
        }
    )
    assert message == Message.model_construct(**message.__dict__)
    assert message.model_fields_set == set(Message.model_fields)


def test_tag_lists_from_the_cache_are_independent() -> None:
    a = records.build_fact("a", "c", "", "", '["x","y"]', "{}", 1, 1)
    a.tags.append("z")
    b = records.build_fact("b", "c", "", "", '["x","y"]', "{}", 1, 1)
    assert b.tags == ["x", "y"]
    assert records.build_fact("c", "c", "", "", "[]", "{}", 1, 1).tags == []


def test_messages_read_back_equal_what_was_written(db: sqlmem.MemoryDB) -> None:
    call = ToolCall(id="c1", name="f", arguments='{"a": 1}')
    written = [
        Message(role="user", content="plain"),
        Message(role="assistant", content="", tool_calls=[call], metadata={"n": 2**62}),
        Message(role="tool", content="r\x00é", tool_call_id="c1", name="f", is_error=True),
    ]
    seqs = db.history.append_many("s", written)
    seqs.append(db.history.append("s", Message(role="user", content="语言 again")))
    for got, want in zip(db.history.get_all("s"), [*written, None], strict=True):
        if want is None:
            assert got.content == "语言 again"
            continue
        assert got.model_dump(exclude={"seq", "session_id", "created_at"}) == want.model_dump(
            exclude={"seq", "session_id", "created_at"}
        )
        assert got.session_id == "s" and got.created_at is not None
    assert [m.seq for m in db.history.get_recent("s", 10)] == seqs
    hits = db.history.search("again")
    assert [h.content for h in hits] == ["语言 again"] and hits[0].score is not None


def test_engine_counts_calls_back_to_zero_after_errors(db: sqlmem.MemoryDB) -> None:
    engine = db._engine
    with pytest.raises(sqlmem.SqlmemError), engine.read() as conn:
        conn.execute("SELECT * FROM no_such_table")
    with pytest.raises(ZeroDivisionError), engine.write() as conn:
        conn.execute("INSERT INTO sessions(session_id, created_at, updated_at) VALUES ('x', 1, 1)")
        _ = 1 / 0
    assert engine._active == 0
    assert db.history.sessions() == []  # rolled back
    with engine.write() as outer:  # a nested failure rolls back to its savepoint only
        outer.execute("INSERT INTO sessions(session_id, created_at, updated_at) VALUES ('a', 1, 1)")
        with pytest.raises(RuntimeError), engine.write() as inner:
            inner.execute(
                "INSERT INTO sessions(session_id, created_at, updated_at) VALUES ('b', 1, 1)"
            )
            raise RuntimeError
    assert engine._active == 0
    with engine.read() as conn:
        assert [r[0] for r in conn.execute("SELECT session_id FROM sessions")] == ["a"]


def test_close_waits_for_a_read_in_flight(db: sqlmem.MemoryDB) -> None:
    inside, release = threading.Event(), threading.Event()

    def reader() -> None:
        with db._engine.read():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=reader)
    thread.start()
    inside.wait(5)
    closer = threading.Thread(target=db.close)
    closer.start()
    closer.join(0.2)
    assert closer.is_alive()  # waiting for the reader
    release.set()
    thread.join(5)
    closer.join(5)
    assert not closer.is_alive() and db.closed


def test_query_cache_gives_the_same_answers() -> None:
    compiler = compiler_for(sqlmem.StoreConfig().tokenizer)
    for _ in range(2):
        assert compiler.match("Running C++ dogs", "all") == '"Running" AND "C" AND "dogs"'
        assert compiler.match("Running C++ dogs", "any") == '"Running" OR "C" OR "dogs"'
        assert compiler.match("???", "any") is None
    long_text = "word " * 100 + "other"
    assert compiler.match(long_text, "any") == '"word" OR "other"'
    assert compiler.match("跑步 x\ud800y", "all") == '"跑 步" AND "xy"'  # dropped


def test_segment_fast_path() -> None:
    assert segment("plain ASCII text") is None
    assert segment("café") is None
    assert segment("我喜欢Python") == " 我  喜  欢 Python"


def test_dumps_json_is_compact_and_strict() -> None:
    assert records.dumps_json({"a": [1, "é"]}) == '{"a":[1,"é"]}'
    with pytest.raises(ValueError):
        records.dumps_json(float("nan"))


@pytest.mark.parametrize(
    "category", ["/a", "a/", "a//b", "..", "a/../b", "a b", "é", "a\n", "a/b/"]
)
def test_category_check_refuses(category: str) -> None:
    with pytest.raises(ValueError):
        records.check_category(category)


@pytest.mark.parametrize("category", ["", "a", "a/b", "A-b_9/c/d"])
def test_category_check_accepts(category: str) -> None:
    assert records.check_category(category) == category
