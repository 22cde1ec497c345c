"""SPEC 18: `SqlmemSession`, the OpenAI Agents SDK's `Session` protocol over sqlmem.

Written from the behaviour the SDK's session tests check (tests/memory/ of
openai-agents-python), plus what sqlmem promises on top: every item deep-equal, the exact
latest `limit`, searchable text, refusals before anything is written, outcomes known
before a cancellation is reported.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

agents = pytest.importorskip("agents")

import sqlmem  # noqa: E402
from sqlmem.adapters.openai_agents import (  # noqa: E402
    ITEM_KEY,
    SqlmemSession,
    item_from_message,
)

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


#: One item of every kind the SDK stores: input messages, output messages with parts,
#: function calls and their outputs, reasoning, hosted tools, computer use, unicode.
ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "What's the weather in Paris?"},
    {"role": "developer", "content": "Be brief."},
    {"role": "system", "content": "You are helpful."},
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "Describe this picture"},
            {
                "type": "input_image",
                "image_url": "data:image/png;base64,iVBORw0KGgo=",
                "detail": "auto",
            },
        ],
    },
    {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Need the weather tool."}],
        "encrypted_content": None,
    },
    {
        "id": "fc_1",
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "Sunny, 21 degrees"},
    {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": [{"type": "input_text", "text": "structured output"}],
    },
    {
        "id": "ws_1",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "paris weather"},
    },
    {
        "id": "fs_1",
        "type": "file_search_call",
        "queries": ["quarterly report"],
        "status": "completed",
        "results": None,
    },
    {
        "id": "cu_1",
        "type": "computer_call",
        "call_id": "cu_call",
        "action": {"type": "click", "x": 10, "y": 20, "button": "left"},
        "pending_safety_checks": [],
        "status": "completed",
    },
    {
        "type": "computer_call_output",
        "call_id": "cu_call",
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA=="},
    },
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [
            {
                "type": "output_text",
                "text": "It is sunny in Paris. 晴れ 😊",
                "annotations": [],
                "logprobs": [{"token": "It", "logprob": -0.01, "bytes": [73, 116]}],
            }
        ],
    },
    {"type": "item_reference", "id": "msg_0"},
    {"role": "user", "content": "nested", "extra": {"a": [1, 2.5, None, True, {"b": "c"}]}},
    {"role": "user", "content": "big int", "n": 2**70, "neg": -(2**63), "nul": "a\x00b"},
]


@pytest.fixture
def session(db: sqlmem.MemoryDB) -> Any:
    s = SqlmemSession("chat:1", db)
    yield s
    s.close()


def test_every_item_kind_round_trips_deep_equal(db: sqlmem.MemoryDB) -> None:
    session = SqlmemSession("chat:1", db)
    sent = copy.deepcopy(ITEMS)
    run(session.add_items(sent))
    assert sent == ITEMS  # the caller's items are not touched
    assert run(session.get_items()) == ITEMS
    assert isinstance(session, agents.memory.Session)  # the SDK's runtime protocol
    reopened = sqlmem.open(db.path)
    try:
        assert run(SqlmemSession("chat:1", reopened).get_items()) == ITEMS
    finally:
        reopened.close()


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
ITEM = st.dictionaries(
    st.sampled_from(["type", "role", "content", "call_id", "output", "name", "arguments", "x"])
    | st.text(),
    JSON,
    max_size=6,
)
_ids = itertools.count()


@settings(max_examples=60)
@given(items=st.lists(ITEM, max_size=5))
def test_any_json_item_round_trips(session: Any, items: list[dict[str, Any]]) -> None:
    session.session_id = f"h{next(_ids)}"
    run(session.add_items(items))
    assert run(session.get_items()) == items


def test_get_items_limit_is_exactly_the_latest(session: Any) -> None:
    """No pair repair: a window may start with a tool output (the SDK drops unmatched
    outputs itself)."""
    run(session.add_items(ITEMS))
    for limit in range(1, len(ITEMS) + 3):
        assert run(session.get_items(limit)) == ITEMS[-limit:]
    assert run(session.get_items(limit=len(ITEMS) - 6))[0]["type"] == "function_call_output"
    assert run(session.get_items(0)) == []
    assert run(session.get_items(-1)) == ITEMS  # SQLiteSession's reading of a negative LIMIT
    with pytest.raises(sqlmem.InvalidArgumentError):
        run(session.get_items("2"))  # type: ignore[arg-type]
    with pytest.raises(sqlmem.InvalidArgumentError):
        run(session.get_items(True))


def test_default_limit_and_settings(db: sqlmem.MemoryDB) -> None:
    session = SqlmemSession("s", db, limit=2)
    assert session.session_settings == agents.SessionSettings(limit=2)
    run(session.add_items([{"role": "user", "content": f"m{i}"} for i in range(5)]))
    assert [i["content"] for i in run(session.get_items())] == ["m3", "m4"]
    assert len(run(session.get_items(4))) == 4  # an explicit limit wins
    assert SqlmemSession("s", db).session_settings == agents.SessionSettings()
    with pytest.raises(sqlmem.InvalidArgumentError):
        SqlmemSession("s", db, limit=1.5)  # type: ignore[arg-type]


def test_pop_item_removes_the_newest(session: Any, db: sqlmem.MemoryDB) -> None:
    assert run(session.pop_item()) is None
    run(session.add_items(ITEMS[:3]))
    assert run(session.pop_item()) == ITEMS[2]
    assert run(session.get_items()) == ITEMS[:2]
    run(session.add_items([ITEMS[5]]))
    assert [m.seq for m in db.history.get_all("chat:1")] == [1, 2, 4]  # seq 3 never reused
    assert run(session.pop_item()) == ITEMS[5]
    assert run(session.pop_item()) == ITEMS[1]
    assert run(session.pop_item()) == ITEMS[0]
    assert run(session.pop_item()) is None
    assert run(session.get_items()) == []


def test_sessions_are_separate_and_clear_removes_one(db: sqlmem.MemoryDB) -> None:
    a, b = SqlmemSession("a", db), SqlmemSession("b", db)
    run(a.add_items([{"role": "user", "content": "from a"}]))
    run(b.add_items([{"role": "user", "content": "from b 1"}, {"role": "user", "content": "b2"}]))
    assert run(b.pop_item()) == {"role": "user", "content": "b2"}
    assert run(a.get_items()) == [{"role": "user", "content": "from a"}]
    run(a.clear_session())
    assert run(a.get_items()) == []
    assert run(b.get_items()) == [{"role": "user", "content": "from b 1"}]
    assert db.history.sessions() == ["b"]
    run(a.clear_session())  # clearing an empty session is fine


def test_item_text_is_searchable(session: Any, db: sqlmem.MemoryDB) -> None:
    run(session.add_items(ITEMS))
    for query, item in [
        ("weather Paris", ITEMS[0]),
        ("picture", ITEMS[3]),
        ("tool", ITEMS[4]),
        ("Sunny degrees", ITEMS[6]),
        ("structured", ITEMS[7]),
        ("quarterly", ITEMS[9]),
        ("晴れ", ITEMS[12]),
    ]:
        hits = db.history.search(query, session_id="chat:1")
        assert item in [item_from_message(h) for h in hits], query
    # base64 payloads and ids are not text
    assert db.history.search("iVBORw0KGgo") == []
    assert db.history.search("fc_1") == []


def test_tool_calls_become_sqlmem_tool_messages(session: Any, db: sqlmem.MemoryDB) -> None:
    """So sqlmem's own pair-safe windows and compaction keep a call with its output."""
    run(session.add_items(ITEMS[4:8]))
    reasoning, call, output, output2 = db.history.get_all("chat:1")
    assert reasoning.role == "assistant"
    assert call.role == "assistant" and [(t.id, t.name) for t in call.tool_calls] == [
        ("call_1", "get_weather")
    ]
    assert output.role == "tool" and output.tool_call_id == "call_1"
    assert output.content == "Sunny, 21 degrees"
    assert output2.role == "tool" and output2.tool_call_id == "call_2"
    assert db.history.get_recent("chat:1", 2) == []  # pair-safe sqlmem window
    assert run(session.get_items(2)) == ITEMS[6:8]  # exact SDK window


def test_messages_written_by_other_code_read_as_easy_input(
    session: Any, db: sqlmem.MemoryDB
) -> None:
    db.history.append_many(
        "chat:1",
        [
            sqlmem.Message(role="user", content="hi"),
            sqlmem.Message(role="tool", content="42", tool_call_id="c9"),
        ],
    )
    assert run(session.get_items()) == [
        {"role": "user", "content": "hi"},
        {"type": "function_call_output", "call_id": "c9", "output": "42"},
    ]


def test_items_among_other_metadata_read_back(session: Any, db: sqlmem.MemoryDB) -> None:
    """An item stored beside other metadata keys (before or after it), and an item key
    holding no object, read back as `item_from_message` reads the message."""
    item = {"role": "user", "content": "x", "n": [1, {"a": None}]}
    db.history.append_many(
        "chat:1",
        [
            sqlmem.Message(role="user", content="a", metadata={"openai_agents_item": item, "z": 1}),
            sqlmem.Message(role="user", content="b", metadata={"a": 1, "openai_agents_item": item}),
            sqlmem.Message(role="user", content="c", metadata={"openai_agents_item": [1]}),
            sqlmem.Message(role="user", content="d", metadata={"openai_agents_item": "s"}),
        ],
    )
    assert run(session.get_items()) == [
        item,
        item,
        {"role": "user", "content": "c"},
        {"role": "user", "content": "d"},
    ]


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "user", "content": float("nan")},
        {"role": "user", "content": float("inf")},
        {"role": "user", "content": b"bytes"},
        {"role": "user", "content": object()},
        {"role": "user", "content": "\ud800"},
        {1: "x", (2, 3): "tuple key"},
        "not a dict",
        None,
    ],
    ids=["nan", "inf", "bytes", "object", "surrogate", "tuple-key", "str", "none"],
)
def test_items_json_cannot_hold_are_refused_whole(session: Any, bad: Any) -> None:
    run(session.add_items([{"role": "user", "content": "kept"}]))
    with pytest.raises(sqlmem.InvalidArgumentError, match=r"items\[1\]"):
        run(session.add_items([{"role": "user", "content": "good"}, bad]))
    assert run(session.get_items()) == [{"role": "user", "content": "kept"}]


def test_too_deep_item_is_refused(session: Any) -> None:
    deep: Any = "leaf"
    for _ in range(80):
        deep = [deep]
    with pytest.raises(sqlmem.InvalidArgumentError, match="nests deeper"):
        run(session.add_items([{"role": "user", "content": deep}]))
    assert run(session.get_items()) == []


def test_bad_arguments(db: sqlmem.MemoryDB, tmp_path: Path) -> None:
    for bad_id in ["", 5, "x" * 513]:
        with pytest.raises(sqlmem.InvalidArgumentError):
            SqlmemSession(bad_id, db)  # type: ignore[arg-type]
    for bad_db in [None, 3, ":memory:"]:
        with pytest.raises(sqlmem.InvalidArgumentError):
            SqlmemSession("s", bad_db)  # type: ignore[arg-type]


def test_ownership_of_the_database(db: sqlmem.MemoryDB, tmp_path: Path) -> None:
    shared = SqlmemSession("s", db)
    run(shared.add_items([{"role": "user", "content": "x"}]))
    shared.close()
    shared.close()
    assert not db.closed  # a database passed in stays the caller's
    with pytest.raises(sqlmem.StoreClosedError):
        run(shared.get_items())
    with pytest.raises(sqlmem.StoreClosedError):
        run(shared.add_items([]))  # closed is closed, even for nothing
    # As the SDK's SQLiteSession refuses: a RuntimeError naming the session's class.
    with pytest.raises(RuntimeError, match=r"^SqlmemSession is closed$"):
        run(shared.pop_item())

    owned = SqlmemSession("s", tmp_path / "own" / "memory.db")
    run(owned.add_items([{"role": "user", "content": "y"}]))
    owned.close()
    assert owned.db.closed

    async def over_async() -> list[Any]:
        async with await sqlmem.aio.open(db.path) as adb:
            s = SqlmemSession("s", adb)
            items = await s.get_items()
            s.close()
            assert not adb.closed
            return items

    assert run(over_async()) == [{"role": "user", "content": "x"}]


def test_concurrent_writers_lose_nothing(db: sqlmem.MemoryDB) -> None:
    """Tasks on one loop and threads with loops of their own, on one session."""
    session = SqlmemSession("busy", db)

    def thread_worker(t: int) -> None:
        other = SqlmemSession("busy", db.path)
        try:
            for i in range(20):
                asyncio.run(other.add_items([{"role": "user", "content": f"t{t}-{i}"}]))
        finally:
            other.close()

    threads = [threading.Thread(target=thread_worker, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()

    async def tasks() -> None:
        await asyncio.gather(
            *(session.add_items([{"role": "user", "content": f"a{i}"}]) for i in range(100))
        )

    run(tasks())
    for t in threads:
        t.join()
    got = [i["content"] for i in run(session.get_items())]
    expected = [f"a{i}" for i in range(100)] + [f"t{t}-{i}" for t in range(3) for i in range(20)]
    assert sorted(got) == sorted(expected)
    session.close()


@pytest.mark.parametrize("operation", ["add", "pop", "clear"])
def test_cancelled_write_reports_only_once_done(db: sqlmem.MemoryDB, operation: str) -> None:
    """A cancelled write finishes whole before CancelledError reaches the caller, so a
    read right after sees its outcome and a retry cannot store it twice."""
    session = SqlmemSession("c", db)
    item = {"role": "user", "content": "once"}
    if operation != "add":
        run(session.add_items([item]))
    holding, release = threading.Event(), threading.Event()

    def hold_write_lock() -> None:
        with db.atomic():
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold_write_lock)
    holder.start()
    holding.wait(10)

    async def main() -> list[Any]:
        call: Callable[[], Coroutine[Any, Any, Any]] = {
            "add": lambda: session.add_items([item]),
            "pop": session.pop_item,
            "clear": session.clear_session,
        }[operation]
        task = asyncio.ensure_future(call())
        for _ in range(3):
            await asyncio.sleep(0)
        task.cancel()
        for _ in range(3):
            await asyncio.sleep(0)
        assert not task.done()  # the write waits for the lock; the caller waits for it
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await session.get_items()

    try:
        items = run(main())
    finally:
        release.set()
        holder.join()
    assert items == ([item] if operation == "add" else [])
    session.close()


def test_agent_runs_with_the_session(db: sqlmem.MemoryDB) -> None:
    """The one-line switch: the SDK's Runner keeps history in sqlmem across turns."""
    from agents import Agent, Runner, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message

    set_tracing_disabled(True)  # no trace export attempted at exit
    session = SqlmemSession("run", db)
    model = ScriptedModel()
    agent = Agent(name="test", model=model)

    async def main() -> None:
        model.enqueue([assistant_message("San Francisco")])
        first = await Runner.run(agent, "Where is the Golden Gate Bridge?", session=session)
        assert first.final_output == "San Francisco"
        model.enqueue([assistant_message("California")])
        await Runner.run(agent, "Which state?", session=session)

    run(main())
    sent = model.calls[-1].input
    assert [i.get("content") for i in sent if i.get("role") == "user"] == [
        "Where is the Golden Gate Bridge?",
        "Which state?",
    ]
    stored = run(session.get_items())
    assert len(stored) == 4 and stored[1]["role"] == "assistant"
    assert db.history.search("California", session_id="run")
    assert all(ITEM_KEY in m.metadata for m in db.history.get_all("run"))
    session.close()
