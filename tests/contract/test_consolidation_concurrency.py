"""No edit made during a model call is lost: `Consolidator`, `consolidate_daily_notes` and
`WorkspaceExtractor` write MEMORY.md / PROFILE.md with the revision they read before the
call; an edit from another connection during the call makes them ask the model once more
with the new text, and a second one makes them report the conflict and change nothing.

Regression: before `expected_revision`, the model's rewrite of the old text replaced an
edit made while the model ran (it survived only as a pruned-later revision).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import sqlmem
import sqlmem.inmemory
from sqlmem import Consolidator, Message, WorkspaceExtractor, consolidate_daily_notes

T0 = datetime(2026, 3, 4, 9, 30, tzinfo=timezone.utc)


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Callable[[], Any]]]:
    """(the database, `other()`: a second handle on the same memory, for another writer)."""
    db: Any
    seconds: list[Any] = []
    if request.param == "postgres":
        open_pg = request.getfixturevalue("open_pg")
        db = open_pg()

        def other() -> Any:
            return open_pg(agent_id=db.agent_id)

    elif request.param == "sqlite":
        db = sqlmem.open(tmp_path / "memory.db")

        def other() -> Any:
            seconds.append(sqlmem.open(tmp_path / "memory.db"))
            return seconds[-1]

    else:
        db = sqlmem.inmemory.open()

        def other() -> Any:
            return db

    yield db, other
    for second in seconds:
        second.close()
    db.close()


class EditingModel:
    """A model that, during the calls numbered in `interfere` (from 1), lets another writer
    append a unique line to `path` from another thread and connection, then answers a
    rewrite of the text it was shown plus its own new line (as a real model would)."""

    def __init__(
        self, writer: Any, interfere: set[int], answer: Callable[[str, int], dict[str, Any]]
    ) -> None:
        self.writer, self.interfere, self.answer = writer, interfere, answer
        self.calls = 0
        self.edits: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.calls += 1
        if self.calls in self.interfere:
            line = f"- edited during call {self.calls}"
            thread = threading.Thread(target=self.writer.docs.append, args=("MEMORY.md", line))
            thread.start()
            thread.join(30)
            self.edits.append(line)
        return json.dumps(self.answer(prompt, self.calls))


def _shown(prompt: str, heading: str) -> str:
    """The document text the prompt showed under `## {heading}`."""
    found = re.search(rf"## {re.escape(heading)}\n(.*?)\n\n## ", prompt, re.S)
    assert found is not None
    return found.group(1)


def _talk(db: Any, session: str, pairs: int, start: int = 0) -> None:
    for i in range(start, start + pairs):
        when = T0 + timedelta(minutes=2 * i)
        db.history.append(session, Message(role="user", content=f"q{i}", created_at=when))
        db.history.append(
            session,
            Message(role="assistant", content=f"a{i}", created_at=when + timedelta(minutes=1)),
        )


def _lost(db: Any, model: EditingModel) -> int:
    memory = db.docs.read("MEMORY.md")
    text = memory.content if memory is not None else ""
    return sum(line not in text for line in model.edits)


def _consolidation_answer(prompt: str, call: int) -> dict[str, Any]:
    memory = _shown(prompt, "Current MEMORY.md")
    return {"history_entry": f"round {call}", "memory_update": f"{memory}\n- fact {call}"}


def test_consolidator_retries_once_and_loses_no_edit(pair: Any) -> None:
    db, other = pair
    db.docs.write("MEMORY.md", "# Memory")
    model = EditingModel(other(), {1, 3, 5, 7, 9}, _consolidation_answer)
    consolidator = Consolidator(db, model, memory_window=10, keep_last=2)
    for round_ in range(5):
        _talk(db, "s", 6, start=10 * round_)
        result = consolidator.maybe_consolidate("s")
        assert result.consolidated and result.memory_updated and result.error is None
    assert model.calls == 10  # each round: a conflict, then one more call
    lost = _lost(db, model)
    print(f"\nconsolidator: {len(model.edits)} edits during model calls, {lost} lost")
    assert lost == 0
    memory = db.docs.read("MEMORY.md").content
    assert all(f"- fact {n}" in memory for n in (2, 4, 6, 8, 10))
    assert db.docs.read("HISTORY.md").content.count("round") == 5  # one line per round


def test_consolidator_reports_a_second_conflict_and_changes_nothing(pair: Any) -> None:
    db, other = pair
    db.docs.write("MEMORY.md", "# Memory")
    _talk(db, "s", 30)
    model = EditingModel(other(), {1, 2}, _consolidation_answer)
    result = Consolidator(db, model, memory_window=50, keep_last=10).maybe_consolidate("s")
    assert not result.consolidated and result.archived == 0 and not result.memory_updated
    assert result.error is not None and "changed by another writer" in result.error
    assert model.calls == 2
    assert db.docs.read("HISTORY.md") is None  # no line
    assert db.history.count("s") == 60 and not db.history.get_summary("s")  # no archive
    assert db.docs.read("MEMORY.md").content == "# Memory\n" + "\n".join(model.edits)
    assert _lost(db, model) == 0


def _notes_answer(prompt: str, call: int) -> dict[str, Any]:
    memory = _shown(prompt, "Current MEMORY.md")
    return {"should_update": True, "reason": "r", "memory_content": f"{memory}\n- note {call}"}


def test_daily_consolidation_retries_once_and_loses_no_edit(pair: Any) -> None:
    db, other = pair
    db.docs.write("MEMORY.md", "# Memory")
    db.docs.append_daily("went hiking")
    model = EditingModel(other(), {1, 3, 5}, _notes_answer)
    for _ in range(3):
        result = consolidate_daily_notes(db, model)
        assert result.consolidated and result.memory_updated and result.error is None
    assert model.calls == 6 and _lost(db, model) == 0
    memory = db.docs.read("MEMORY.md").content
    assert all(f"- note {n}" in memory for n in (2, 4, 6))


def test_daily_consolidation_reports_a_second_conflict(pair: Any) -> None:
    db, other = pair
    db.docs.append_daily("went hiking")
    model = EditingModel(other(), {1, 2}, _notes_answer)
    result = consolidate_daily_notes(db, model)
    assert not result.consolidated and not result.memory_updated
    assert result.error is not None and "changed by another writer" in result.error
    assert db.docs.read("MEMORY.md").content == "\n".join(model.edits)
    assert db.docs.read("MEMORY.md").revision == 2  # created by the edits, nothing else


def _extraction_answer(prompt: str, call: int) -> dict[str, Any]:
    memory = _shown(prompt, "Current MEMORY.md")
    return {
        "should_update": True,
        "reason": "learned",
        "daily_entry": f"entry {call}",
        "memory_update": f"{memory}\n- extracted {call}",
        "profile_update": "",
    }


def _conversation(db: Any) -> None:
    for role, text in [
        ("user", "I want to plan a trip to Oslo"),
        ("assistant", "Sure!"),
        ("user", "In winter please"),
        ("assistant", "Noted"),
    ]:
        db.history.append("s", Message(role=role, content=text))


def test_extractor_retries_once_and_loses_no_edit(pair: Any) -> None:
    db, other = pair
    db.docs.write("MEMORY.md", "# Memory")
    _conversation(db)
    model = EditingModel(other(), {1, 3}, _extraction_answer)
    extractor = WorkspaceExtractor(db, model, cooldown_seconds=0)
    for _ in range(2):
        outcome = extractor.run("s")
        assert outcome.ran and outcome.error is None and "MEMORY.md" in outcome.updated
    assert model.calls == 4 and _lost(db, model) == 0
    note = db.docs.list("memory/")[0].path
    assert db.docs.read(note).content.count("entry") == 2  # the retried runs' lines only
    assert "entry 2" in db.docs.read(note).content and "entry 1" not in db.docs.read(note).content


def test_extractor_reports_a_second_conflict_and_changes_nothing(pair: Any) -> None:
    db, other = pair
    _conversation(db)
    model = EditingModel(other(), {1, 2}, _extraction_answer)
    outcome = WorkspaceExtractor(db, model, cooldown_seconds=0).run("s")
    assert outcome.ran and outcome.updated == [] and outcome.reason == "conflict"
    assert outcome.error is not None and "changed the documents" in outcome.error
    assert db.docs.list("memory/") == []  # no daily line either
    assert db.docs.read("MEMORY.md").content == "\n".join(model.edits)


# -- the extractor's gate: one state per database, whichever handle or process runs it ------


def _blocked_model(inside: threading.Event, release: threading.Event) -> Callable[[str], str]:
    def model(prompt: str) -> str:
        inside.set()
        assert release.wait(30)
        return json.dumps({"should_update": False, "reason": "no"})

    return model


def test_another_handle_is_busy_while_a_run_is_under_way(pair: Any) -> None:
    # On PostgreSQL the two handles share no object, so only the lease in the database
    # can tell the second that a run is under way.
    db, other = pair
    _conversation(db)
    inside, release = threading.Event(), threading.Event()
    first = WorkspaceExtractor(db, _blocked_model(inside, release), cooldown_seconds=0)
    thread = threading.Thread(target=first.run, args=("s",))
    thread.start()
    try:
        assert inside.wait(30)
        second = WorkspaceExtractor(
            other(), FakeAnswer({"should_update": False}), cooldown_seconds=0
        )
        assert second.run("s").reason == "busy"
    finally:
        release.set()
        thread.join(30)
    again = WorkspaceExtractor(other(), FakeAnswer({"should_update": False}), cooldown_seconds=0)
    assert again.run("s").ran  # given back when the run ended


def test_the_cooldown_is_shared_by_every_handle(pair: Any) -> None:
    db, other = pair
    _conversation(db)
    model = FakeAnswer({"should_update": False, "reason": "no"})
    assert WorkspaceExtractor(db, model, cooldown_seconds=3600).run("s").ran
    assert WorkspaceExtractor(other(), model, cooldown_seconds=3600).run("s").reason == "cooldown"
    assert model.calls == 1


def test_the_conversation_is_counted_before_the_transcript_is_cut(pair: Any) -> None:
    # Regression: min_messages was compared with the cut transcript, so
    # min_messages=4, max_transcript_messages=3 never ran.
    db, _ = pair
    _conversation(db)
    model = FakeAnswer({"should_update": False, "reason": "no"})
    outcome = WorkspaceExtractor(
        db, model, min_messages=4, max_transcript_messages=3, cooldown_seconds=0
    ).run("s")
    assert outcome.ran and model.calls == 1
    assert "I want to plan" not in model.prompts[0] and "In winter please" in model.prompts[0]
    db.history.append("t", Message(role="user", content="only three messages here"))
    db.history.append("t", Message(role="assistant", content="yes"))
    db.history.append("t", Message(role="user", content="still only three"))
    assert WorkspaceExtractor(db, model, cooldown_seconds=0).run("t").reason == "too few messages"


def test_bad_lease_seconds(pair: Any) -> None:
    db, _ = pair
    for bad in (0, -1, True, "5", float("nan")):
        with pytest.raises(sqlmem.InvalidArgumentError, match="lease_seconds"):
            WorkspaceExtractor(db, FakeAnswer({}), lease_seconds=bad)


class FakeAnswer:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.calls = 0
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.calls += 1
        self.prompts.append(prompt)
        return json.dumps(self.answer)
