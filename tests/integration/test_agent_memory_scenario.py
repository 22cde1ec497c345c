"""A long agent loop with a scripted model: the window never forgets.

200 turns through `AgentMemory` (and through a bare `ContextWindow` with a summarizer), at
several window sizes, with tool calls in the conversation and the consolidation,
extraction and summary model failing half the time. After every turn:

- the prompt is within `max_input_tokens`;
- no message is lost: the active and archived messages are exactly those appended;
- every archived message is covered by a record: a HISTORY.md entry (or the summary)
  that names it;
- the model was called exactly when the rules say it should be: for consolidation when the
  window passed its trigger with older turns to archive, or the session passed
  `memory_window`; for extraction when the extractor's rules allow.

The first test reproduces what a new user measured when assembling the parts by hand (a
window of 1,500 tokens and a consolidator past 40 messages: 376 of 400 messages archived
with no summary, the consolidator's model never called).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import sqlmem
import sqlmem.inmemory
from sqlmem import (
    AgentMemory,
    Consolidator,
    ContextWindow,
    Fact,
    Message,
    ToolCall,
    WorkspaceExtractor,
)
from sqlmem.context import SUMMARY_PREFIX
from sqlmem.context.compactor import message_tokens

SESSION = "chat:7"
SYSTEM = "You are a helpful travel assistant."
TRIGGER_RATIO = 0.75  # ContextWindow's default, which AgentMemory uses
ID = re.compile(r"\bm\d{4}\b")


@pytest.fixture(params=["sqlite", "memory"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    opened: Any = (
        sqlmem.open(tmp_path / "memory.db") if request.param == "sqlite" else sqlmem.inmemory.open()
    )
    yield opened
    opened.close()


# -- the scripted conversation -------------------------------------------------------------


@dataclass
class Conversation:
    """Turns with unique message ids (`m0001` ...), varied lengths, a tool call every
    fourth turn and a too-short user message every seventh."""

    seed: int
    appended: list[str] = field(default_factory=list)
    _next: int = 1

    def __post_init__(self) -> None:
        self.random = random.Random(self.seed)

    def _text(self, words: str) -> str:
        ident = f"m{self._next:04d}"
        self._next += 1
        self.appended.append(ident)
        filler = " ".join(self.random.choice(WORDS) for _ in range(self.random.randint(3, 40)))
        return f"{ident} {words} {filler}".strip() if words != "ok" else f"{ident} ok"

    def user(self, turn: int) -> Message:
        words = "ok" if turn % 7 == 6 else "tell me about"
        return Message(role="user", content=self._text(words))

    def reply(self, turn: int) -> list[Message]:
        if turn % 4 != 3:
            return [Message(role="assistant", content=self._text("here is"))]
        call = ToolCall(id=f"call{turn}", name="search_trains", arguments='{"to": "Porto"}')
        return [
            Message(role="assistant", content=self._text("calling"), tool_calls=[call]),
            Message(role="tool", content=self._text("result"), tool_call_id=f"call{turn}"),
            Message(role="assistant", content=self._text("found")),
        ]


WORDS = ["train", "Porto", "Lisbon", "museum", "dinner", "ticket", "morning", "river", "bridge"]


class ScriptedModel:
    """The consolidation, extraction and summary model: fails half the time (raises,
    answers blank or answers prose); else answers naming the message ids it was shown."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.calls = {"consolidate": 0, "extract": 0}
        self.failures = {"consolidate": 0, "extract": 0}

    def _fails(self, kind: str) -> str | None:
        if self.random.random() >= 0.5:
            return None
        self.failures[kind] += 1
        mode = self.random.choice(["raise", "blank", "prose"])
        if mode == "raise":
            raise TimeoutError("the model timed out")
        return "" if mode == "blank" else "Sorry, I cannot help with that."

    def __call__(self, prompt: str) -> str:
        kind = "consolidate" if '"history_entry"' in prompt else "extract"
        assert '"daily_entry"' in prompt or kind == "consolidate"
        self.calls[kind] += 1
        failed = self._fails(kind)
        if failed is not None:
            return failed
        if kind == "consolidate":
            shown = ID.findall(prompt.split("## Messages\n", 1)[1])
            entry = "Covered " + " ".join(shown)
            return json.dumps({"history_entry": entry, "memory_update": ""})
        return json.dumps(
            {
                "should_update": True,
                "reason": "travel plans",
                "daily_entry": "Planned the trip.",
                "memory_update": "# Memory\n- Travels by train.",
                "profile_update": "",
            }
        )


# -- what the rules imply ------------------------------------------------------------------


def _window_consolidates(
    db: Any, system: Message, user: Message, summary: str, active: list[Message], limit: int
) -> bool:
    """Past the trigger, with messages before the last two user turns: the window asks
    the consolidator (the prompt's size counted as the window counts it)."""
    head = [
        system,
        *([Message(role="user", content=f"{SUMMARY_PREFIX}\n{summary}")] * bool(summary)),
    ]
    tokens = sum(message_tokens(m) for m in [*head, *active, user])
    users = [i for i, m in enumerate(active) if m.role == "user"]
    return tokens > limit * TRIGGER_RATIO and len(users) >= 2 and users[-2] > 0


def _extractor_runs(active: list[Message]) -> bool:
    """The extractor's rules (cooldown 0): four user/assistant messages among the last
    thirty, and a last user message of ten characters or more."""
    talk = [m for m in active if m.role in ("user", "assistant")][-30:]
    users = [m for m in talk if m.role == "user"]
    return len(talk) >= 4 and bool(users) and len(users[-1].content.strip()) >= 10


def _covered_ids(db: Any) -> set[str]:
    doc = db.docs.read("HISTORY.md")
    return set(ID.findall(doc.content)) if doc is not None else set()


def _check_nothing_lost_and_all_covered(db: Any, talk: Conversation) -> list[str]:
    everything = db.history.get_all(SESSION, include_archived=True)
    assert [ID.match(m.content).group(0) for m in everything] == talk.appended  # type: ignore[union-attr]
    active = {m.content[:5] for m in db.history.get_all(SESSION)}
    archived = [i for i in talk.appended if i not in active]
    assert set(archived) <= _covered_ids(db), "an archived message no record covers"
    return archived


# -- the scenarios -------------------------------------------------------------------------


def test_the_parts_assembled_by_hand_no_longer_forget(db: Any) -> None:
    """The measured setup: the window alone at 1,500 tokens, the consolidator past 40."""
    talk, model = Conversation(seed=1), ScriptedModel(seed=2)
    window = ContextWindow(db.history, max_input_tokens=1500)
    consolidator = Consolidator(db, model, memory_window=40, keep_last=10)
    for turn in range(200):
        user = talk.user(turn)
        built = window.build(SESSION, SYSTEM, user)
        assert built.tokens <= 1500
        db.history.append_many(SESSION, [user, *talk.reply(turn)])
        consolidator.maybe_consolidate(SESSION)
    archived = _check_nothing_lost_and_all_covered(db, talk)
    assert len(archived) > 300  # they are archived, each under an entry
    assert model.calls["consolidate"] > 0
    successes = model.calls["consolidate"] - model.failures["consolidate"]
    assert len(db.docs.read("HISTORY.md").content.splitlines()) == successes


@pytest.mark.parametrize(
    ("max_input_tokens", "memory_window", "keep_last"),
    [(1500, 6, 2), (4000, 40, 10), (128_000, 50, 10)],
)
def test_agent_memory_over_200_turns(
    db: Any, max_input_tokens: int, memory_window: int, keep_last: int
) -> None:
    _run_agent_memory(db, 200, max_input_tokens, memory_window, keep_last)


def test_agent_memory_on_postgres(open_pg: Callable[..., Any]) -> None:
    _run_agent_memory(open_pg(), 60, 1500, 6, 2)


def _run_agent_memory(
    db: Any, turns: int, max_input_tokens: int, memory_window: int, keep_last: int
) -> None:
    db.facts.index_many(Fact(content=f"The user likes {w} things.") for w in WORDS)
    talk, model = Conversation(seed=max_input_tokens), ScriptedModel(seed=memory_window)
    memory = AgentMemory(
        db,
        model,
        system_prompt=SYSTEM,
        max_input_tokens=max_input_tokens,
        memory_window=memory_window,
        keep_last=keep_last,
        extract=WorkspaceExtractor(db, model, cooldown_seconds=0),
    )
    expected = {"consolidate": 0, "extract": 0}
    for turn in range(turns):
        user = talk.user(turn)
        summary, active = db.history.get_summary(SESSION), db.history.get_all(SESSION)
        built = memory.before(SESSION, user)
        assert built.tokens <= max_input_tokens and not built.over_limit
        expected["consolidate"] += _window_consolidates(
            db, built.messages[0], user, summary, active, max_input_tokens
        )
        assert model.calls == expected, f"turn {turn}, before"
        reply = talk.reply(turn)
        expected["consolidate"] += db.history.count(SESSION) + len(reply) > memory_window
        memory.after(SESSION, reply)
        expected["extract"] += _extractor_runs(db.history.get_all(SESSION))
        assert model.calls == expected, f"turn {turn}, after"
        if turn % 20 == 19:
            _check_nothing_lost_and_all_covered(db, talk)
    archived = _check_nothing_lost_and_all_covered(db, talk)
    assert model.calls["consolidate"] > 0 and model.calls["extract"] > 0
    assert 0 < model.failures["consolidate"] < model.calls["consolidate"]
    successes = model.calls["consolidate"] - model.failures["consolidate"]
    history_md = db.docs.read("HISTORY.md")
    assert len(history_md.content.splitlines()) == successes
    assert len(archived) > 0
    if successes:  # the session summary is the last entry
        assert db.history.get_summary(SESSION) == history_md.content.splitlines()[-1]


class RangeSummarizer:
    """Folds the archived messages into `Covered mAAAA-mBBBB` (the previous range extended),
    failing half the time."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.calls = self.failures = 0

    def __call__(self, messages: list[Message], previous: str) -> str:
        self.calls += 1
        if self.random.random() < 0.5:
            self.failures += 1
            raise TimeoutError("the summary model timed out")
        ids = [ID.match(m.content).group(0) for m in messages]  # type: ignore[union-attr]
        first = previous.split()[1].split("-")[0] if previous else ids[0]
        return f"Covered {first}-{ids[-1]}"


@pytest.mark.parametrize("max_input_tokens", [1500, 4000])
def test_a_window_with_a_failing_summarizer_over_200_turns(db: Any, max_input_tokens: int) -> None:
    talk, summarizer = Conversation(seed=3), RangeSummarizer(seed=4)
    window = ContextWindow(db.history, max_input_tokens=max_input_tokens, summarizer=summarizer)
    expected = 0
    for turn in range(200):
        user = talk.user(turn)
        summary, active = db.history.get_summary(SESSION), db.history.get_all(SESSION)
        built = window.build(SESSION, SYSTEM, user)
        assert built.tokens <= max_input_tokens
        expected += _window_consolidates(
            db, built.messages[0], user, summary, active, max_input_tokens
        )
        assert summarizer.calls == expected, f"turn {turn}"
        db.history.append_many(SESSION, [user, *talk.reply(turn)])
    summary = db.history.get_summary(SESSION)
    first, last = summary.split()[1].split("-")
    active = {m.content[:5] for m in db.history.get_all(SESSION)}
    archived = [i for i in talk.appended if i not in active]
    assert archived == [i for i in talk.appended if first <= i <= last]  # all covered
    assert len(db.history.get_all(SESSION, include_archived=True)) == len(talk.appended)
    assert 0 < summarizer.failures < summarizer.calls
