"""One agent's turn loop with a fake LLM, over both store implementations.

Each turn: restore the session (summary + recent window), inject relevant memory into the
prompt, answer (some turns through a tool call and its result), extract facts from the
exchange, and compact past a threshold. At the end every message ever written is still
findable with `history.search`, archived or not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import sqlmem
from sqlmem.context import Compactor, LLMExtractor, inject_memory
from sqlmem.protocols import FactStore, HistoryStore
from sqlmem.records import Message, ToolCall

SESSION = "telegram:42:"

# What the user says on each turn, and the fact the fake model extracts from it.
TURNS = [
    (
        "Hi, my name is Ada and I live in Lisbon.",
        "The user's name is Ada; the user lives in Lisbon",
    ),
    ("What's the weather like today?", None),
    ("I have a dog called Rex.", "The user has a dog called Rex"),
    ("Can you look up vets near me?", None),
    ("I am allergic to peanuts.", "The user is allergic to peanuts"),
    ("Suggest a dinner recipe.", None),
    ("My sister Grace visits next week.", "The user's sister Grace visits next week"),
    ("Remind me what my dog is called?", None),
    ("What should I cook for Grace?", None),
]
NEEDS_TOOL = {1, 3, 5}


@dataclass
class Stores:
    history: HistoryStore
    facts: FactStore
    reopen: Callable[[], Stores] | None = None


@pytest.fixture(params=["memory", "sqlite"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    if request.param == "memory":
        from sqlmem.inmemory.facts import InMemoryFactStore
        from sqlmem.inmemory.history import InMemoryHistoryStore

        yield Stores(InMemoryHistoryStore(), InMemoryFactStore())
        return
    opened: list[sqlmem.MemoryDB] = []

    def open_stores() -> Stores:
        for db in opened:
            db.close()  # a restart: the previous process is gone
        db = sqlmem.open(tmp_path / "memory.db")
        opened.append(db)
        return Stores(db.history, db.facts, open_stores)

    yield open_stores()
    for db in opened:
        db.close()


class FakeLLM:
    """Answers extraction prompts from TURNS, chat prompts with a canned reply."""

    def __init__(self) -> None:
        self.chat_prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        if "long-term memory" in prompt:
            found = [fact for said, fact in TURNS if fact and f"user: {said}" in prompt]
            return "\n".join(f"- {fact}" for fact in found) or "NONE"
        self.chat_prompts.append(prompt)
        return "OK"

    def summarize(self, messages: list[Message], previous: str) -> str:
        said = "; ".join(m.content for m in messages if m.role == "user")
        return f"{previous} | {said}" if previous else said


def marker(n: int) -> str:
    """A word that only message n contains, to find it again with search."""
    return f"zq{n:03d}mark"


def run_turn(
    turn: int, stores: Stores, llm: FakeLLM, compactor: Compactor, written: list[str]
) -> None:
    history, facts = stores.history, stores.facts
    said, _ = TURNS[turn]

    # Restore: summary + recent window, as a prompt; inject memory for this message.
    summary = history.get_summary(SESSION)
    window = history.get_recent(SESSION, 20)
    assert not window or window[0].role != "tool"
    memory = inject_memory(facts, said, max_facts=5, max_tokens=500)
    prompt = "\n".join(
        [summary, memory, *(f"{m.role}: {m.content}" for m in window), f"user: {said}"]
    )
    reply = llm.complete(prompt)

    def note(text: str) -> str:
        written.append(marker(len(written)))
        return f"{text} {written[-1]}"

    exchange = [Message(role="user", content=note(said))]
    if turn in NEEDS_TOOL:
        call = ToolCall(id=f"call-{turn}", name="lookup", arguments=f'{{"turn": {turn}}}')
        exchange += [
            Message(role="assistant", content=note(""), tool_calls=[call]),
            Message(role="tool", content=note("lookup result"), tool_call_id=call.id),
        ]
    exchange.append(Message(role="assistant", content=note(reply)))
    history.append_many(SESSION, exchange)

    LLMExtractor(llm.complete).extract(SESSION, exchange, facts)
    result = compactor.maybe_compact(SESSION)
    assert result.error is None
    assert history.count(SESSION) <= compactor.threshold


def test_agent_turn_loop(stores: Stores) -> None:
    llm = FakeLLM()
    written: list[str] = []

    def compactor_for(s: Stores) -> Compactor:
        return Compactor(s.history, llm.summarize, threshold=8, retain_recent=3, emergency_retain=1)

    for turn in range(len(TURNS)):
        if turn == 5 and stores.reopen is not None:
            stores = stores.reopen()  # restart mid-conversation: everything comes back
        run_turn(turn, stores, llm, compactor_for(stores), written)

    history, facts = stores.history, stores.facts

    # Facts were extracted once each and injected into later prompts.
    assert facts.count() == 4
    assert "## Relevant Memory\n\n- The user has a dog called Rex\n" in llm.chat_prompts[7]
    assert "- The user's sister Grace visits next week\n" in llm.chat_prompts[8]

    # Compaction ran: some messages archived, the summary folds the early user messages.
    every = history.get_all(SESSION, include_archived=True)
    active = history.get_all(SESSION)
    assert len(every) == len(written) > len(active)
    assert active[0].role != "tool"
    summary = history.get_summary(SESSION)
    assert summary.startswith("Hi, my name is Ada")

    # Every message, archived or active, is still findable by its own marker word.
    for word in written:
        found = history.search(word, session_id=SESSION)
        assert len(found) == 1, word
        assert re.search(rf"\b{word}\b", found[0].content)
        assert found[0].session_id == SESSION

    # An emergency (context overflow) keeps only the last message; nothing is lost.
    compactor_for(stores).emergency_compact(SESSION)
    assert history.count(SESSION) == 1
    assert len(history.get_all(SESSION, include_archived=True)) == len(written)
    assert history.search(written[0], session_id=SESSION)
