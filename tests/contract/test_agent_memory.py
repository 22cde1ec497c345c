"""`sqlmem.AgentMemory` on a SQLite file, the in-memory database and PostgreSQL: what
`before` stores and returns, what `after` stores and runs, a model that fails never
raising into the turn nor losing a message, and the arguments it refuses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sqlmem
import sqlmem.inmemory
from sqlmem import (
    AgentMemory,
    Fact,
    InvalidArgumentError,
    Message,
    PackConfig,
    ToolCall,
    WorkspaceExtractor,
)
from sqlmem.context import SUMMARY_PREFIX
from sqlmem.context.compactor import message_tokens


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    opened: Any
    if request.param == "postgres":
        opened = request.getfixturevalue("open_pg")()
    elif request.param == "sqlite":
        opened = sqlmem.open(tmp_path / "memory.db")
    else:
        opened = sqlmem.inmemory.open()
    yield opened
    opened.close()


class Model:
    """The consolidation and extraction model: answers each kind, or raises when `fail`."""

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.prompts: list[str] = []

    def kinds(self) -> list[str]:
        return ["consolidate" if '"history_entry"' in p else "extract" for p in self.prompts]

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self.fail:
            raise ConnectionError("model unreachable")
        if '"history_entry"' in prompt:
            return json.dumps({"history_entry": "They planned a trip.", "memory_update": ""})
        return json.dumps(
            {
                "should_update": True,
                "reason": "a preference",
                "daily_entry": "Planned a trip to Porto.",
                "memory_update": "# Memory\n- Likes trains.",
                "profile_update": "",
            }
        )


def _all(db: Any, session: str = "s") -> list[str]:
    return [m.content for m in db.history.get_all(session, include_archived=True)]


def test_before_stores_the_message_and_returns_the_prompt(db: Any) -> None:
    db.docs.write("AGENTS.md", "Be brief.")
    db.facts.index(Fact(content="The user likes trains."))
    memory = AgentMemory(db, Model(), system_prompt="You are helpful.", extract=False)
    built = memory.before("s", "Do I like trains?")
    system = built.messages[0]
    assert system.role == "system"
    assert system.content.startswith("You are helpful.\n\n--- AGENTS.md ---\nBe brief.\n")
    assert system.content.endswith("# Memory\n\n## Semantic\n- The user likes trains.")
    assert [m.content for m in built.messages[1:]] == ["Do I like trains?"]
    assert built.tokens == sum(message_tokens(m) for m in built.messages)
    assert _all(db) == ["Do I like trains?"]  # stored once
    memory.after("s", "You do.")
    built = memory.before("s", Message(role="user", content="And planes?"))
    assert [m.content for m in built.messages[1:]] == [
        "Do I like trains?",
        "You do.",
        "And planes?",
    ]
    assert [m.role for m in db.history.get_all("s")] == ["user", "assistant", "user"]


def test_after_stores_tool_calls_with_their_results(db: Any) -> None:
    memory = AgentMemory(db, Model(), extract=False)
    memory.before("s", "What is the weather?")
    call = ToolCall(id="c1", name="weather", arguments='{"city": "Porto"}')
    memory.after(
        "s",
        [
            Message(role="assistant", content="", tool_calls=[call]),
            Message(role="tool", content="sunny", tool_call_id="c1"),
            Message(role="assistant", content="Sunny in Porto."),
        ],
    )
    roles = [m.role for m in db.history.get_all("s")]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert db.history.get_all("s")[1].tool_calls[0].name == "weather"


def test_after_consolidates_past_memory_window(db: Any) -> None:
    model = Model()
    memory = AgentMemory(db, model, memory_window=6, keep_last=2, extract=False)
    for i in range(3):
        memory.before("s", f"question number {i}")
        memory.after("s", f"answer {i}")
    assert model.prompts == []  # 6 active messages: not past the window
    memory.before("s", "question number 3")
    memory.after("s", "answer 3")
    assert model.kinds() == ["consolidate"]
    assert db.history.count("s") == 2
    assert db.docs.read("HISTORY.md").content.endswith("They planned a trip.")
    assert len(_all(db)) == 8


def test_after_extracts_when_the_extractor_allows(db: Any) -> None:
    model = Model()
    memory = AgentMemory(db, model)  # extract=True: the extractor's defaults
    memory.before("s", "I want to go to Porto by train")
    memory.after("s", "Noted.")
    assert model.prompts == []  # too few messages
    memory.before("s", "Next month, for a week or so")
    memory.after("s", "Sounds good.")
    assert model.kinds() == ["extract"]
    assert db.docs.read("MEMORY.md").content == "# Memory\n- Likes trains."
    memory.before("s", "Also the museums there please")
    memory.after("s", "Sure.")
    assert model.kinds() == ["extract"]  # the cooldown
    built = memory.before("s", "thanks")
    assert "--- MEMORY.md ---\n# Memory\n- Likes trains." in built.messages[0].content


def test_a_failing_model_never_raises_nor_loses_a_message(db: Any) -> None:
    model = Model(fail=True)
    extractor = WorkspaceExtractor(db, model, cooldown_seconds=0)
    memory = AgentMemory(
        db, model, max_input_tokens=300, memory_window=4, keep_last=2, extract=extractor
    )
    sent = []
    for i in range(12):
        text = f"question {i} " + "q" * 60
        built = memory.before("s", text)
        assert built.tokens <= 300
        memory.after("s", f"answer {i} " + "a" * 60)
        sent += [text, f"answer {i} " + "a" * 60]
    assert _all(db) == sent
    assert db.history.count("s") == 24  # nothing archived: no record was ever written
    assert db.docs.read("HISTORY.md") is None
    kinds = model.kinds()
    assert kinds.count("consolidate") > 0 and kinds.count("extract") > 0
    assert db.history.get_summary("s") == ""


def test_the_pack_keeps_within_max_input_tokens(db: Any) -> None:
    db.facts.index_many(Fact(content=f"The user's trip fact number {i}. " * 4) for i in range(60))
    memory = AgentMemory(db, Model(), max_input_tokens=400, extract=False)
    built = memory.before("s", "trip")
    assert "## Semantic" in built.messages[0].content
    assert built.tokens <= 400
    large = AgentMemory(db, Model(), extract=False, pack=PackConfig(top_k={"semantic": 60}))
    assert large.before("t", "trip").tokens > 1000  # the budget, not the store, is the limit


def test_the_summary_goes_in_as_context_not_instructions(db: Any) -> None:
    memory = AgentMemory(db, Model(), memory_window=4, keep_last=2, extract=False)
    for i in range(3):
        memory.before("s", f"question {i}")
        memory.after("s", f"answer {i}")
    built = memory.before("s", "and then?")
    assert built.messages[1].role == "user"
    assert built.messages[1].content == f"{SUMMARY_PREFIX}\n" + db.history.get_summary("s")


def test_bad_arguments_raise(db: Any) -> None:
    model = Model()
    for kwargs in (
        {"max_input_tokens": 0},
        {"memory_window": 5, "keep_last": 5},
        {"system_prompt": None},
        {"pack": {"top_k": 1}},
        {"extract": "yes"},
    ):
        with pytest.raises(InvalidArgumentError):
            AgentMemory(db, model, **kwargs)
    with pytest.raises(InvalidArgumentError):
        AgentMemory(db, "not callable")  # type: ignore[arg-type]
    other = sqlmem.inmemory.open()
    with pytest.raises(InvalidArgumentError, match="same database"):
        AgentMemory(db, model, extract=WorkspaceExtractor(other, model))
    other.close()
    memory = AgentMemory(db, model)
    with pytest.raises(InvalidArgumentError):
        memory.before("s", 3)  # type: ignore[arg-type]
    for reply in (3, [], ["text"]):
        with pytest.raises(InvalidArgumentError):
            memory.after("s", reply)  # type: ignore[arg-type]
    assert _all(db) == []


def test_an_async_model_or_database_names_the_async_form(tmp_path: Path) -> None:
    async def complete(prompt: str) -> str:
        return ""

    with sqlmem.open(tmp_path / "m.db") as db:
        with pytest.raises(InvalidArgumentError, match=r"sqlmem\.aio\.AgentMemory"):
            AgentMemory(db, complete)  # type: ignore[arg-type]

        class Async:
            def __init__(self) -> None:
                self.history = type("H", (), {"append": complete})()

        with pytest.raises(InvalidArgumentError, match=r"sqlmem\.aio\.AgentMemory"):
            AgentMemory(Async(), Model())  # type: ignore[arg-type]


@pytest.mark.parametrize("count", [4, 27, 29, 30, 45])
def test_the_extractor_reads_the_last_messages_of_any_session(db: Any, count: int) -> None:
    """A session shorter than `max_transcript_messages` is read whole (it used to be cut
    to its last `count - 30` messages when fewer than 30, and skipped as too short)."""
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        db.history.append("s", Message(role=role, content=f"message number {i:02d}"))
    model = Model()
    outcome = WorkspaceExtractor(db, model, cooldown_seconds=0).run("s")
    assert outcome.ran and outcome.error is None
    shown = [n for n in range(count) if f"message number {n:02d}" in model.prompts[0]]
    assert shown == list(range(max(0, count - 30), count))
