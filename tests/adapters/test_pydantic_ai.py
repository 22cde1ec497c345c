"""`sqlmem.adapters.pydantic_ai`: the memory tools as a toolset, the memory pack as
instructions, and message history that reads back exactly what Pydantic AI gave it, on
every backend. Models are Pydantic AI's own `FunctionModel`/`TestModel` (no network)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RequestUsage

import sqlmem
from sqlmem.adapters.pydantic_ai import (
    SqlmemMessageHistory,
    memory_instructions,
    memory_toolset,
)

pytestmark = pytest.mark.usefixtures("close_the_loop_run_sync_leaves")


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def make_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    opened: list[Any] = []

    def make() -> Any:
        if request.param == "postgres":
            return request.getfixturevalue("open_pg")()
        target = tmp_path / f"m{len(opened)}.db" if request.param == "sqlite" else ":memory:"
        db = sqlmem.open(target)
        opened.append(db)
        return db

    yield make
    for db in opened:
        db.close()


# -- message shapes -----------------------------------------------------------------------

text = st.text(max_size=40)
ids = st.text(alphabet="abcdefghij0123456789_-", min_size=1, max_size=12)
stamps = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(timezone.utc)
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
args = st.dictionaries(ids, json_values, max_size=3)

request_parts = st.one_of(
    st.builds(UserPromptPart, content=text, timestamp=stamps),
    st.builds(SystemPromptPart, content=text, timestamp=stamps),
    st.builds(
        ToolReturnPart, tool_name=ids, content=json_values, tool_call_id=ids, timestamp=stamps
    ),
    # a retry answering a tool call, and one answering none (output validation)
    st.builds(
        ToolReturnPart,
        tool_name=ids,
        content=text,
        tool_call_id=ids,
        timestamp=stamps,
        outcome=st.just("retried"),
        retry=st.builds(
            RetryInfo,
            cause=st.sampled_from(["validation_error", "model_retry"]),
            attempt=st.integers(1, 5),
        ),
    ),
    st.builds(
        RetryFeedbackPart,
        content=text,
        timestamp=stamps,
        retry=st.builds(
            RetryInfo, cause=st.sampled_from(["validation_error", "no_output", "model_retry"])
        ),
    ),
)
response_parts = st.one_of(
    st.builds(TextPart, content=text),
    st.builds(ThinkingPart, content=text),
    st.builds(ToolCallPart, tool_name=ids, args=args, tool_call_id=ids),
    st.builds(ToolCallPart, tool_name=ids, args=args.map(json.dumps), tool_call_id=ids),
)
requests = st.builds(
    ModelRequest,
    parts=st.lists(request_parts, min_size=1, max_size=4),
    instructions=st.none() | text,
)
responses = st.builds(
    ModelResponse,
    parts=st.lists(response_parts, min_size=1, max_size=4),
    model_name=st.none() | ids,
    timestamp=stamps,
    usage=st.builds(
        RequestUsage, input_tokens=st.integers(0, 10**6), output_tokens=st.integers(0, 10**6)
    ),
)
conversations = st.lists(requests | responses, max_size=8)


@settings(max_examples=60)
@given(messages=conversations, more=conversations)
def test_messages_round_trip_exactly(
    messages: list[ModelMessage], more: list[ModelMessage]
) -> None:
    db = sqlmem.open(":memory:")
    history = SqlmemMessageHistory(db, "conversation")
    history.save(messages)
    history.save(more)
    assert history.load() == messages + more
    if messages + more:
        assert history.load(last=1) == (messages + more)[-1:]
    db.close()


def test_round_trip_on_every_backend(make_db: Callable[[], Any]) -> None:
    db = make_db()
    when = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    messages: list[ModelMessage] = [
        ModelRequest(
            parts=[
                SystemPromptPart("be brief", timestamp=when),
                UserPromptPart("hi ☕", timestamp=when),
            ]
        ),
        ModelResponse(
            parts=[TextPart("calling"), ToolCallPart("search_memory", {"query": "tea"}, "call-1")],
            model_name="fn",
            timestamp=when + timedelta(seconds=1),
        ),
        ModelRequest(
            parts=[
                ToolReturnPart(
                    "search_memory",
                    "bad args",
                    "call-1",
                    timestamp=when,
                    outcome="retried",
                    retry=RetryInfo("validation_error", attempt=1),
                )
            ]
        ),
        ModelRequest(
            parts=[ToolReturnPart("search_memory", {"results": []}, "call-1", timestamp=when)]
        ),
        ModelResponse(parts=[TextPart("nothing yet")], timestamp=when),
    ]
    history = SqlmemMessageHistory(db, "c")
    history.save(messages)
    assert SqlmemMessageHistory(db, "c").load() == messages
    assert SqlmemMessageHistory(db, "other").load() == []
    assert [m.content for m in db.history.search("nothing")] == ["nothing yet"]


def test_a_wrong_message_is_refused_before_anything_is_written() -> None:
    db = sqlmem.open(":memory:")
    history = SqlmemMessageHistory(db, "c")
    good = ModelRequest(parts=[UserPromptPart("hello")])
    with pytest.raises(sqlmem.InvalidArgumentError, match="ModelRequest or ModelResponse"):
        history.save([good, {"role": "user"}])  # type: ignore[list-item]
    assert history.load() == []


# -- the example agent --------------------------------------------------------------------


def remembering_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Saves what the user says on the first turn of a run, searches on the second,
    answers with what it found on the third (a deterministic stand-in for an LLM)."""
    last = messages[-1]
    returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    prompt = (
        next(p.content for p in last.parts if isinstance(p, UserPromptPart)) if not returns else ""
    )
    if not returns:
        assert isinstance(prompt, str)
        if prompt.startswith("remember: "):
            fact = prompt.removeprefix("remember: ")
            return ModelResponse(parts=[ToolCallPart("save_memory", {"content": fact}, "save-1")])
        return ModelResponse(parts=[ToolCallPart("search_memory", {"query": prompt}, "search-1")])
    found = json.loads(str(returns[0].content))
    if returns[0].tool_name == "save_memory":
        return ModelResponse(parts=[TextPart("saved")])
    return ModelResponse(parts=[TextPart("; ".join(r["content"] for r in found["results"]))])


def test_the_example_agent_end_to_end(make_db: Callable[[], Any]) -> None:
    db = make_db()
    seen_instructions: list[str | None] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen_instructions.append(info.instructions)
        return remembering_model(messages, info)

    agent = Agent(
        FunctionModel(model), toolsets=[memory_toolset(db)], instructions=memory_instructions(db)
    )
    history = SqlmemMessageHistory(db, "user-42")
    first = agent.run_sync("remember: the user drinks green tea", message_history=history.load())
    history.save(first.new_messages())
    assert first.output == "saved"
    assert [f.content for f in db.facts.list()] == ["the user drinks green tea"]
    second = agent.run_sync("green tea", message_history=history.load())
    history.save(second.new_messages())
    assert second.output == "the user drinks green tea"
    assert seen_instructions[0] is None  # nothing remembered yet: no memory section
    assert "the user drinks green tea" in (seen_instructions[-1] or "")
    assert history.load() == first.new_messages() + second.new_messages()
    assert len(history.load()) == 8


def test_tool_failures_reach_the_model_as_json() -> None:
    db = sqlmem.open(":memory:")

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("forget_memory", {"id": "missing"}, "c1")])
        return ModelResponse(parts=[TextPart(str(returns[0].content))])

    agent = Agent(FunctionModel(model), toolsets=[memory_toolset(db)])
    answer = json.loads(agent.run_sync("x").output)
    assert answer["code"] == "not_found"


def test_read_only_toolset_and_test_model() -> None:
    db = sqlmem.open(":memory:")
    toolset = memory_toolset(db, groups=["facts"], read_only=True)
    agent = Agent(TestModel(), toolsets=[toolset])
    result = agent.run_sync("anything")
    called = {
        p.tool_name for m in result.new_messages() for p in m.parts if isinstance(p, ToolCallPart)
    }
    assert called and not called & {
        "save_memory",
        "update_memory",
        "forget_memory",
        "promote_memory",
    }
    assert db.facts.count() == 0


def test_sqlmem_never_loads_pydantic_ai_and_a_missing_extra_is_named() -> None:
    def python(code: str) -> str:
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        ).stdout

    assert (
        python("import sqlmem, sqlmem.adapters, sys; print('pydantic_ai' in sys.modules)").strip()
        == "False"
    )
    out = python(
        "import sys; sys.modules['pydantic_ai'] = None\n"
        "try:\n    import sqlmem.adapters.pydantic_ai\n"
        "except Exception as exc:\n    print(type(exc).__name__, exc)"
    )
    assert out.startswith("SqlmemError") and "sqlmem[pydantic-ai]" in out
