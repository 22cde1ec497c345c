"""The parts compose: a `ContextWindow` given a `Consolidator` archives past its trigger only
under a HISTORY.md entry written in the same transaction; when the model fails nothing is
archived; `Consolidator.consolidate` consolidates now whatever `memory_window` says. On a
SQLite file, the in-memory database and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sqlmem
import sqlmem.inmemory
from sqlmem import Consolidator, ContextWindow, InvalidArgumentError, Message


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def ws(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    db: Any
    if request.param == "postgres":
        db = request.getfixturevalue("open_pg")()
    elif request.param == "sqlite":
        db = sqlmem.open(tmp_path / "memory.db")
    else:
        db = sqlmem.inmemory.open()
    yield db
    db.close()


def _chars(text: str) -> int:
    return len(text)


def _turns(db: Any, count: int, size: int = 40) -> None:
    for i in range(count):
        db.history.append("s", Message(role="user", content=f"question {i} " + "q" * size))
        db.history.append("s", Message(role="assistant", content=f"answer {i} " + "a" * size))


class Model:
    """Answers a consolidation with an entry naming the questions it saw, or fails."""

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self.fail:
            raise TimeoutError("model down")
        seen = [
            line.split(": ", 1)[1].split(" ")[1] for line in prompt.splitlines() if "USER:" in line
        ]
        return json.dumps({"history_entry": "questions " + ",".join(seen), "memory_update": ""})


def test_past_the_trigger_the_window_consolidates_then_archives(ws: Any) -> None:
    _turns(ws, 6)
    model = Model()
    consolidator = Consolidator(ws, model, memory_window=50, keep_last=10)
    window = ContextWindow(
        ws.history, max_input_tokens=600, consolidator=consolidator, estimator=_chars
    )
    built = window.build("s", "sys", "next question")
    assert built.compacted and built.error is None
    assert len(model.prompts) == 1  # memory_window is the after-turn rule, not the window's
    assert ws.history.count("s") == 4  # the last 2 user turns stay active
    history_md = ws.docs.read("HISTORY.md").content
    assert history_md.count("\n") == 0 and "questions 0,1,2,3" in history_md
    assert ws.history.get_summary("s") == history_md  # the entry is the session summary
    assert len(ws.history.get_all("s", include_archived=True)) == 12
    assert built.tokens <= 600


def test_a_failing_consolidation_archives_nothing(ws: Any) -> None:
    _turns(ws, 6)
    model = Model(fail=True)
    window = ContextWindow(
        ws.history,
        max_input_tokens=600,
        consolidator=Consolidator(ws, model),
        estimator=_chars,
    )
    built = window.build("s", "sys", "next question")
    assert not built.compacted
    assert built.error is not None and "model down" in built.error
    assert ws.history.count("s") == 12 and ws.docs.read("HISTORY.md") is None
    assert built.tokens <= 600 and built.trimmed > 0
    window.build("s", "sys", "again")
    assert len(model.prompts) == 2  # the next turn tries again


def test_the_consolidator_is_tried_when_the_summarizer_fails(ws: Any) -> None:
    _turns(ws, 6)

    def broken(messages: list[Message], previous: str) -> str:
        raise RuntimeError("summarizer down")

    model = Model()
    window = ContextWindow(
        ws.history,
        max_input_tokens=600,
        summarizer=broken,
        consolidator=Consolidator(ws, model),
        estimator=_chars,
    )
    built = window.build("s", "sys", "next question")
    assert built.compacted and ws.history.count("s") == 4
    assert built.error is not None and "summarizer down" in built.error
    assert "questions 0,1,2,3" in ws.docs.read("HISTORY.md").content


def test_the_consolidator_must_share_the_windows_history(ws: Any) -> None:
    other = sqlmem.inmemory.open()
    try:
        with pytest.raises(InvalidArgumentError, match="history"):
            ContextWindow(ws.history, consolidator=Consolidator(other, Model()))
    finally:
        other.close()


def test_consolidate_now_ignores_memory_window_even_when_zero(ws: Any) -> None:
    _turns(ws, 3)
    model = Model()
    consolidator = Consolidator(ws, model, memory_window=0, keep_last=2)
    assert consolidator.maybe_consolidate("s").consolidated is False
    assert model.prompts == [] and ws.history.count("s") == 2  # the 0.2 trim, no model
    _turns(ws, 3)
    result = consolidator.consolidate("s", keep_last=2)
    assert result.consolidated and result.archived == 6 and len(model.prompts) == 1
    assert ws.history.count("s") == 2
    assert consolidator.consolidate("s", keep_last=2).archived == 0  # nothing before them
    with pytest.raises(InvalidArgumentError):
        consolidator.consolidate("s", keep_last=-1)
