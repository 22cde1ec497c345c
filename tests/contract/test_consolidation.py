"""SPEC 15: Consolidator, consolidate_daily_notes and WorkspaceExtractor, on a SQLite file
and on `sqlmem.inmemory.open()`'s twins: formats, one transaction, and model failures that
change nothing."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import sqlmem
import sqlmem.inmemory
from sqlmem import (
    Consolidator,
    InvalidArgumentError,
    Message,
    ToolCall,
    WorkspaceExtractor,
    consolidate_daily_notes,
)

T0 = datetime(2026, 3, 4, 9, 30, tzinfo=timezone.utc)


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def ws(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    db: Any
    if request.param == "postgres":  # a fresh agent of the session's server
        db = request.getfixturevalue("open_pg")()
    elif request.param == "sqlite":
        db = sqlmem.open(tmp_path / "memory.db")
    else:
        db = sqlmem.inmemory.open()
    yield db
    db.close()


class FakeModel:
    """Answers with the given texts in turn (the last one repeats), recording prompts."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        answer = self.answers[0] if len(self.answers) == 1 else self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer if isinstance(answer, str) else json.dumps(answer)


def _talk(db: Any, session: str, pairs: int) -> None:
    for i in range(pairs):
        when = T0 + timedelta(minutes=2 * i)
        db.history.append(session, Message(role="user", content=f"q{i}", created_at=when))
        db.history.append(
            session,
            Message(role="assistant", content=f"a{i}", created_at=when + timedelta(minutes=1)),
        )


# -- Consolidator ------------------------------------------------------------------------


def test_below_the_window_nothing_happens(ws: Any) -> None:
    _talk(ws, "s", 25)  # 50 messages: not more than the window
    model = FakeModel({"history_entry": "x", "memory_update": ""})
    result = Consolidator(ws, model).maybe_consolidate("s")
    assert not result.consolidated and result.archived == 0 and model.prompts == []


def test_consolidation_writes_history_memory_and_archives_in_one_go(ws: Any) -> None:
    ws.docs.write("MEMORY.md", "# Memory\n- old fact")
    _talk(ws, "s", 30)  # 60 messages
    answer = (
        "```json\n"
        + json.dumps(
            {"history_entry": "Talked about\nquestions.", "memory_update": "# Memory\n- new fact"}
        )
        + "\n```"
    )
    model = FakeModel(answer)
    result = Consolidator(ws, model, memory_window=50, keep_last=10).maybe_consolidate("s")
    last_archived = T0 + timedelta(minutes=2 * 24 + 1)  # message 50: the answer a24
    line = f"[{last_archived:%Y-%m-%d %H:%M}] Talked about questions."
    assert result.consolidated and result.error is None
    assert (result.archived, result.history_entry, result.memory_updated) == (50, line, True)
    assert ws.docs.read("HISTORY.md").content == line
    assert ws.docs.read("MEMORY.md").content == "# Memory\n- new fact"
    assert ws.docs.read_revision("MEMORY.md", 1) == "# Memory\n- old fact"
    assert ws.history.count("s") == 10
    assert ws.history.get_summary("s") == line
    prompt = model.prompts[0]
    assert "# Memory\n- old fact" in prompt
    assert f"[{T0:%Y-%m-%d %H:%M}] USER: q0" in prompt
    assert "ASSISTANT: a24" in prompt and "q25" not in prompt


def test_a_dated_entry_is_kept_and_a_second_one_appends(ws: Any) -> None:
    _talk(ws, "s", 30)
    model = FakeModel({"history_entry": "2026-03-04 first part", "memory_update": ""})
    consolidator = Consolidator(ws, model, memory_window=50, keep_last=10)
    result = consolidator.maybe_consolidate("s")
    assert result.history_entry == "2026-03-04 first part" and not result.memory_updated
    assert ws.docs.read("MEMORY.md") is None
    _talk(ws, "s", 25)
    consolidator.maybe_consolidate("s")
    assert ws.docs.read("HISTORY.md").content.splitlines() == [
        "2026-03-04 first part",
        "2026-03-04 first part",
    ]


def test_tool_calls_are_named_in_the_transcript(ws: Any) -> None:
    ws.history.append("s", Message(role="user", content="weather?", created_at=T0))
    ws.history.append(
        "s",
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="c", name="weather", arguments="{}")],
            created_at=T0,
        ),
    )
    ws.history.append("s", Message(role="tool", tool_call_id="c", content="sun", created_at=T0))
    _talk(ws, "s", 3)
    model = FakeModel({"history_entry": "weather", "memory_update": ""})
    Consolidator(ws, model, memory_window=2, keep_last=1).maybe_consolidate("s")
    assert f"[{T0:%Y-%m-%d %H:%M}] ASSISTANT [tools: weather]: " in model.prompts[0]
    assert f"[{T0:%Y-%m-%d %H:%M}] TOOL: sun" in model.prompts[0]


@pytest.mark.parametrize(
    "answer",
    [
        RuntimeError("model down"),
        "",
        "   ",
        "not json at all",
        "[1, 2]",
        {"history_entry": 3, "memory_update": ""},
        {"history_entry": "ok", "memory_update": ["x"]},
        {"history_entry": "  ", "memory_update": "new"},
        {"memory_update": "new"},
    ],
)
def test_model_failures_change_nothing(ws: Any, answer: Any) -> None:
    _talk(ws, "s", 30)
    result = Consolidator(ws, FakeModel(answer)).maybe_consolidate("s")
    assert not result.consolidated and result.error
    assert ws.history.count("s") == 60
    assert ws.docs.read("HISTORY.md") is None and ws.docs.read("MEMORY.md") is None


def test_a_refused_memory_update_leaves_nothing_half_done(ws: Any) -> None:
    _talk(ws, "s", 30)
    huge = "x" * (10 * 1024 * 1024 + 1)  # over the 10 MiB document limit
    model = FakeModel({"history_entry": "entry", "memory_update": huge})
    result = Consolidator(ws, model).maybe_consolidate("s")
    assert not result.consolidated and result.error
    assert ws.history.count("s") == 60 and ws.docs.read("HISTORY.md") is None


def test_a_session_changed_while_the_model_ran_is_left_alone(ws: Any) -> None:
    _talk(ws, "s", 30)

    def meddling_model(prompt: str) -> str:
        ws.history.compact("s", keep_last=20)  # another worker got there first
        return json.dumps({"history_entry": "late", "memory_update": ""})

    result = Consolidator(ws, meddling_model).maybe_consolidate("s")
    assert not result.consolidated and result.error and "changed" in result.error
    assert ws.history.count("s") == 20 and ws.docs.read("HISTORY.md") is None


def test_window_zero_only_trims(ws: Any) -> None:
    _talk(ws, "s", 10)
    model = FakeModel(RuntimeError("must not be called"))
    result = Consolidator(ws, model, memory_window=0, keep_last=4).maybe_consolidate("s")
    assert (result.consolidated, result.archived) == (False, 16)
    assert ws.history.count("s") == 4 and model.prompts == []
    assert len(ws.history.get_all("s", include_archived=True)) == 20


@pytest.mark.parametrize(
    "kwargs",
    [{"memory_window": -1}, {"keep_last": -1}, {"memory_window": 5, "keep_last": 5}],
)
def test_bad_consolidator_arguments(ws: Any, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError):
        Consolidator(ws, FakeModel("{}"), **kwargs)
    with pytest.raises(InvalidArgumentError):
        Consolidator(ws, "not callable")  # type: ignore[arg-type]


# -- daily notes ---------------------------------------------------------------------------


def test_daily_notes_feed_memory(ws: Any) -> None:
    ws.docs.write("MEMORY.md", "old memory")
    for i in range(9):
        ws.docs.append_daily(f"note of day {i}", day=date(2026, 3, 1) + timedelta(days=i))
    model = FakeModel({"should_update": True, "reason": "new", "memory_content": "new memory"})
    result = consolidate_daily_notes(ws, model, days=7)
    assert result.consolidated and result.memory_updated
    assert ws.docs.read("MEMORY.md").content == "new memory"
    prompt = model.prompts[0]
    assert "note of day 8" in prompt and "note of day 2" in prompt
    assert "note of day 1" not in prompt and "old memory" in prompt


def test_daily_notes_without_an_update(ws: Any) -> None:
    ws.docs.append_daily("a note", day=date(2026, 3, 1))
    model = FakeModel({"should_update": False, "reason": "nothing", "memory_content": ""})
    result = consolidate_daily_notes(ws, model)
    assert result.consolidated and not result.memory_updated
    assert ws.docs.read("MEMORY.md") is None


def test_daily_notes_none_and_failures(ws: Any) -> None:
    model = FakeModel(RuntimeError("no"))
    assert not consolidate_daily_notes(ws, model).consolidated and model.prompts == []
    ws.docs.append_daily("a note", day=date(2026, 3, 1))
    for bad in ({"should_update": "yes"}, {"should_update": True, "memory_content": ""}, "x"):
        result = consolidate_daily_notes(ws, FakeModel(bad))
        assert not result.consolidated and result.error
    assert ws.docs.read("MEMORY.md") is None
    with pytest.raises(InvalidArgumentError):
        consolidate_daily_notes(ws, FakeModel("{}"), days=0)


# -- WorkspaceExtractor ------------------------------------------------------------------

_UPDATE = {
    "should_update": True,
    "reason": "learned things",
    "daily_entry": "User planned a trip\nto Oslo",
    "memory_update": "# Memory\n- trip to Oslo",
    "profile_update": "# Profile\n- likes snow",
}


def _conversation(db: Any, session: str = "s") -> None:
    turns = [
        ("user", "I want to plan a trip to Oslo"),
        ("assistant", "Sure!"),
        ("user", "In winter please"),
        ("assistant", "Noted"),
    ]
    for role, text in turns:
        db.history.append(session, Message(role=role, content=text))


def test_extraction_updates_the_workspace(ws: Any) -> None:
    _conversation(ws)
    model = FakeModel(_UPDATE)
    outcome = WorkspaceExtractor(ws, model, cooldown_seconds=0).run("s")
    today = datetime.now(timezone.utc).date()
    note = f"memory/{today:%Y-%m-%d}.md"
    assert outcome.ran and outcome.error is None and outcome.reason == "learned things"
    assert outcome.updated == [note, "MEMORY.md", "PROFILE.md"]
    assert ws.docs.read(note).content.endswith("User planned a trip to Oslo")
    assert ws.docs.read("PROFILE.md").content == "# Profile\n- likes snow"
    assert "USER: I want to plan a trip to Oslo" in model.prompts[0]


def test_extraction_skips_without_calling_the_model(ws: Any) -> None:
    model = FakeModel(_UPDATE)
    extractor = WorkspaceExtractor(ws, model, cooldown_seconds=0)
    assert extractor.run("s", trigger_source="cron").reason == "disabled source"
    ws.history.append("s", Message(role="user", content="hello there friend"))
    assert extractor.run("s").reason == "too few messages"
    for text in ("answer", "more", "ok"):
        ws.history.append("s", Message(role="user" if text == "ok" else "assistant", content=text))
    assert extractor.run("s").reason == "user message too short"
    assert model.prompts == []


def test_cooldown_is_per_database(ws: Any) -> None:
    _conversation(ws)
    first = WorkspaceExtractor(ws, FakeModel(_UPDATE), cooldown_seconds=3600)
    other = WorkspaceExtractor(ws, FakeModel(_UPDATE), cooldown_seconds=3600)
    assert first.run("s").ran
    assert other.run("s").reason == "cooldown"


def test_a_concurrent_run_is_busy_at_once(ws: Any) -> None:
    _conversation(ws)
    inside, release = threading.Event(), threading.Event()

    def slow_model(prompt: str) -> str:
        inside.set()
        release.wait(10)
        return json.dumps({"should_update": False, "reason": "no"})

    first = WorkspaceExtractor(ws, slow_model, cooldown_seconds=0)
    thread = threading.Thread(target=first.run, args=("s",))
    thread.start()
    assert inside.wait(10)
    second = WorkspaceExtractor(ws, FakeModel(_UPDATE), cooldown_seconds=0)
    assert second.run("s").reason == "busy"
    release.set()
    thread.join(10)


def test_transcript_rules(ws: Any) -> None:
    ws.history.append("s", Message(role="system", content="SYSTEM TEXT"))
    for i in range(40):
        ws.history.append("s", Message(role="user", content=f"user message number {i}"))
    ws.history.append("s", Message(role="assistant", content="y" * 3000))
    ws.history.append("s", Message(role="user", content="the last question here"))
    model = FakeModel({"should_update": False, "reason": "nothing new"})
    outcome = WorkspaceExtractor(ws, model, cooldown_seconds=0, max_transcript_messages=5).run("s")
    assert outcome.ran and outcome.updated == [] and outcome.reason == "nothing new"
    prompt = model.prompts[0]
    assert "SYSTEM TEXT" not in prompt and "number 36 " not in prompt
    assert "user message number 37" in prompt
    assert "y" * 2000 + "... [truncated]" in prompt and "y" * 2001 not in prompt


@pytest.mark.parametrize("answer", [RuntimeError("down"), "", "{", {"should_update": 1}])
def test_extraction_model_failures_change_nothing(ws: Any, answer: Any) -> None:
    _conversation(ws)
    outcome = WorkspaceExtractor(ws, FakeModel(answer), cooldown_seconds=0).run("s")
    assert outcome.ran and outcome.error and outcome.updated == []
    assert ws.docs.list() == []


def test_bad_extractor_arguments(ws: Any) -> None:
    model: Callable[[str], str] = FakeModel("{}")
    for kwargs in ({"min_messages": -1}, {"cooldown_seconds": -1}, {"skip_sources": "cron"}):
        with pytest.raises(InvalidArgumentError):
            WorkspaceExtractor(ws, model, **kwargs)  # type: ignore[arg-type]


def test_eight_concurrent_runs_call_the_model_once_and_the_others_are_busy_at_once(
    ws: Any,
) -> None:
    _conversation(ws)
    inside, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def blocked_model(prompt: str) -> str:
        calls.append(prompt)
        inside.set()
        assert release.wait(10)
        return json.dumps({"should_update": False, "reason": "no"})

    outcomes: list[Any] = []
    model_still_blocked: list[bool] = []

    def run() -> None:
        extractor = WorkspaceExtractor(ws, blocked_model, cooldown_seconds=0)
        outcomes.append(extractor.run("s"))
        model_still_blocked.append(not release.is_set())

    first = threading.Thread(target=run)
    first.start()
    assert inside.wait(10)
    others = [threading.Thread(target=run) for _ in range(7)]
    for thread in others:
        thread.start()
    for thread in others:
        thread.join(10)
    busy = [o for o in outcomes if o.reason == "busy"]
    assert len(busy) == 7 and not any(t.is_alive() for t in others)
    assert model_still_blocked == [True] * 7  # they returned while the model was blocked
    release.set()
    first.join(10)
    assert len(calls) == 1 and sum(o.ran for o in outcomes) == 1


def test_eight_threads_started_together_one_runs_the_model_seven_are_busy_at_once(
    ws: Any, tmp_path: Path
) -> None:
    # All eight released by one barrier, each with its own extractor (and, on SQLite, its
    # own MemoryDB of the same file half the time): the gate is per database, so exactly
    # one gets in and blocks in the model; the seven others return "busy" while it is
    # still blocked (each records that the model had not been released when its call
    # returned). Behaviour, not speed: no wall-clock bound (1.18 s under load once failed
    # a bound of 1 s on PostgreSQL while the behaviour was right).
    _conversation(ws)
    inside, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def blocked_model(prompt: str) -> str:
        calls.append(prompt)
        inside.set()
        assert release.wait(10)
        return json.dumps({"should_update": False, "reason": "no"})

    path = getattr(ws, "path", None)
    others = [sqlmem.open(path) for _ in range(4)] if path is not None else []
    barrier, done = threading.Barrier(8), threading.Semaphore(0)
    outcomes: dict[int, Any] = {}
    model_still_blocked: dict[int, bool] = {}

    def run(n: int) -> None:
        db = others[n // 2] if others and n % 2 else ws
        extractor = WorkspaceExtractor(db, blocked_model, cooldown_seconds=0)
        barrier.wait(10)
        outcomes[n] = extractor.run("s")
        model_still_blocked[n] = not release.is_set()
        done.release()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    try:
        for thread in threads:
            thread.start()
        assert inside.wait(10)
        for _ in range(7):  # the seven busy ones end; the runner stays blocked
            assert done.acquire(timeout=10)
        assert len(outcomes) == 7 and all(o.reason == "busy" for o in outcomes.values())
        assert not any(o.ran for o in outcomes.values())
        assert len(model_still_blocked) == 7 and all(model_still_blocked.values())
        assert len(calls) == 1  # only the runner reached the model
        release.set()
        for thread in threads:
            thread.join(10)
        assert len(outcomes) == 8 and len(calls) == 1
        assert sum(o.ran for o in outcomes.values()) == 1
    finally:
        release.set()
        for db in others:
            db.close()
