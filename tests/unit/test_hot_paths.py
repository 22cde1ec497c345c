"""The hot paths made cheap for issue 8 keep their behaviour.

Each test pins one shortcut: the class-based engine context managers, the history read
plan, the unvalidated record builders, the query and tag caches, the ASCII fast paths.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sqlmem
from sqlmem import Fact, Message, ToolCall, records
from sqlmem.rules import encoding
from sqlmem.rules import rows as row_builders
from sqlmem.search.query import compiler_for, segment
from sqlmem.sqlite.stores import history_sql

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


#: A stored row's memory-item columns (SPEC 12) at their defaults, the fingerprint left
#: empty as `Fact.model_construct` leaves it.
ITEM = ("semantic", "", 1.0, 0.5, "[]", None, "", 1)


def test_unvalidated_builders_equal_model_construct() -> None:
    assert row_builders._FAST  # the fast path is in use with this pydantic
    assert row_builders._construct_ok()
    fact = row_builders.build_fact(
        "i", "c", "s", "a/b", '["t","u"]', '{"k":[1,{"x":null}]}', 5, 7, *ITEM
    )
    assert fact == Fact.model_construct(**fact.__dict__)
    assert fact.created_at == encoding.dt_from_ms(5) and fact.updated_at == encoding.dt_from_ms(7)
    message = row_builders.message_from_values(
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


_ROW = (3, "tool", "c", "n", "x", '[{"id":"x","name":"f","arguments":"{}"}]', 1, '{"k":[1]}', 5)


@pytest.mark.parametrize("fast", [True, False])
def test_messages_from_rows_equal_model_construct(
    fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The inlined row builder and its model_construct fallback give the same records."""
    monkeypatch.setattr(row_builders, "_FAST", fast)
    plain = (4, "user", "hi", "", "", "[]", 0, "{}", 1_795_000_000_123)
    got = row_builders.messages_from_rows([_ROW, plain], "s", [1.5, 0.5])
    want = [
        Message.model_construct(
            role="tool", content="c", name="n", tool_call_id="x",
            tool_calls=[ToolCall.model_construct(id="x", name="f", arguments="{}")],
            is_error=True, metadata={"k": [1]}, created_at=encoding.EPOCH + timedelta(0, 0, 0, 5),
            seq=3, session_id="s", score=1.5,
        ),
        Message.model_construct(
            role="user", content="hi", name="", tool_call_id="", tool_calls=[], is_error=False,
            metadata={}, created_at=encoding.EPOCH + timedelta(0, 0, 0, 1_795_000_000_123),
            seq=4, session_id="s", score=0.5,
        ),
    ]  # fmt: skip
    assert got == want
    assert [repr(m) for m in got] == [repr(m) for m in want]
    assert all(m.model_fields_set == set(Message.model_fields) for m in got)
    # Each record owns its containers: changing one read never shows in another.
    again = row_builders.messages_from_rows([plain], "s")[0]
    got[1].metadata["x"] = 1
    got[1].tool_calls.append(got[0].tool_calls[0])
    got[1].model_fields_set.discard("role")
    assert again.metadata == {} and again.tool_calls == []
    assert again.model_fields_set == set(Message.model_fields)


@pytest.mark.parametrize("fast", [True, False])
def test_facts_from_rows_equal_model_construct(fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The inlined fact builder (searches, listings, and build_fact) and its
    model_construct fallback give the same records."""
    monkeypatch.setattr(row_builders, "_FAST", fast)
    rows = [
        ("i", "c", "s", "a/b", '["t","u"]', '{"k":[1,{"x":null}]}', 5, 1_795_000_000_123, *ITEM),
        ("j", "plain", "", "", "[]", "{}", 7, 7, *ITEM),
    ]
    want = [
        Fact.model_construct(
            id="i", content="c", source="s", tags=["t", "u"], category="a/b",
            metadata={"k": [1, {"x": None}]}, created_at=encoding.EPOCH + timedelta(0, 0, 0, 5),
            updated_at=encoding.EPOCH + timedelta(0, 0, 0, 1_795_000_000_123), score=2.5,
        ),
        Fact.model_construct(
            id="j", content="plain", source="", tags=[], category="", metadata={},
            created_at=encoding.EPOCH + timedelta(0, 0, 0, 7),
            updated_at=encoding.EPOCH + timedelta(0, 0, 0, 7), score=2.5,
        ),
    ]  # fmt: skip
    ranked = row_builders.facts_from_rows([(*r, -2.5) for r in rows], ranked=True)
    assert ranked == want
    assert [repr(f) for f in ranked] == [repr(f) for f in want]
    assert all(f.model_fields_set == set(Fact.model_fields) for f in ranked)
    listed = row_builders.facts_from_rows(rows, ranked=False)
    assert listed == [f.model_copy(update={"score": None}) for f in want]
    assert [row_builders.build_fact(*r, 2.5) for r in rows] == want
    # Each record owns its containers.
    ranked[0].tags.append("v")
    ranked[0].metadata["y"] = 2
    again = row_builders.facts_from_rows(rows[:1], ranked=False)[0]
    assert again.tags == ["t", "u"] and again.metadata == {"k": [1, {"x": None}]}


@pytest.mark.parametrize(
    "ms",
    [
        0, 1, 999, 1_000, 1_795_000_000_123, (1 << 42) - 1, 1 << 42, (1 << 42) + 1,
        -1, -999, -1_000, -62_135_596_800_000, 253_402_300_799_999,
    ],
)  # fmt: skip
def test_dt_from_ms_is_exact_on_both_paths(ms: int) -> None:
    """fromtimestamp() is used below 2**42 ms, epoch + timedelta elsewhere; both exact."""
    encoding._DATETIMES.clear()
    want = encoding.EPOCH + timedelta(0, 0, 0, ms)
    first, cached = encoding.dt_from_ms(ms), encoding.dt_from_ms(ms)
    assert first == want and first.tzinfo is timezone.utc
    assert cached is first
    assert encoding.dt_to_ms(first) == ms


@given(st.integers(min_value=-62_135_596_800_000, max_value=253_402_300_799_999))
def test_dt_from_ms_round_trips_any_datetime(ms: int) -> None:
    assert encoding.dt_from_ms(ms) == encoding.EPOCH + timedelta(0, 0, 0, ms)
    assert encoding.dt_to_ms(encoding.dt_from_ms(ms)) == ms


def test_the_datetime_cache_stays_bounded() -> None:
    encoding._DATETIMES.clear()
    for ms in range(encoding._DATETIMES_MAX + 10):
        encoding.dt_from_ms(ms)
    assert len(encoding._DATETIMES) <= encoding._DATETIMES_MAX
    assert encoding.dt_from_ms(5) == encoding.EPOCH + timedelta(0, 0, 0, 5)


def test_tag_lists_from_the_cache_are_independent() -> None:
    a = row_builders.build_fact("a", "c", "", "", '["x","y"]', "{}", 1, 1, *ITEM)
    a.tags.append("z")
    b = row_builders.build_fact("b", "c", "", "", '["x","y"]', "{}", 1, 1, *ITEM)
    assert b.tags == ["x", "y"]
    assert row_builders.build_fact("c", "c", "", "", "[]", "{}", 1, 1, *ITEM).tags == []


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
    assert encoding.dumps_json({"a": [1, "é"]}) == '{"a":[1,"é"]}'
    with pytest.raises(ValueError):
        encoding.dumps_json(float("nan"))


@pytest.mark.parametrize(
    "category", ["/a", "a/", "a//b", "..", "a/../b", "a b", "é", "a\n", "a/b/"]
)
def test_category_check_refuses(category: str) -> None:
    with pytest.raises(ValueError):
        records.check_category(category)


@pytest.mark.parametrize("category", ["", "a", "a/b", "A-b_9/c/d"])
def test_category_check_accepts(category: str) -> None:
    assert records.check_category(category) == category
