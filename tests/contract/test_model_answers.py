"""Issue 17, "bad input": every kind of bad model answer, for each of the three model-driven
helpers of SPEC 15 (Consolidator, WorkspaceExtractor, consolidate_daily_notes), on a SQLite
file and on the twins.

Each answer either changes nothing and is reported in the result's `error`, or (JSON in a
code fence, or after a word of prose) completes exactly as the bare JSON would. "Times
out" is the caller's client giving up: the callable raises TimeoutError (an OSError, which
must not escape the package either)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import sqlmem
import sqlmem.inmemory
from sqlmem import Consolidator, Message, WorkspaceExtractor, consolidate_daily_notes

T0 = datetime(2026, 3, 4, 9, 30, tzinfo=timezone.utc)


@pytest.fixture(params=["sqlite", "memory"])
def ws(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    db: Any = (
        sqlmem.open(tmp_path / "memory.db") if request.param == "sqlite" else sqlmem.inmemory.open()
    )
    yield db
    db.close()


def _model(answer: Any) -> Callable[[str], Any]:
    """A model client that raises `answer` when it is an exception, else returns it."""

    def complete(prompt: str) -> Any:
        if isinstance(answer, BaseException):
            raise answer
        return answer

    return complete


def _fenced(obj: dict[str, Any], lang: str = "json") -> str:
    return f"```{lang}\n{json.dumps(obj, indent=2)}\n```"


#: Answers that must change nothing, with a word of what they are (the test id).
BAD_COMMON: list[tuple[str, Any]] = [
    ("raises", RuntimeError("model down")),
    ("times-out", TimeoutError("read timed out after 30 s")),
    ("connection-error", ConnectionError("reset by peer")),
    ("blank", ""),
    ("whitespace", " \n\t "),
    ("none", None),
    ("prose", "Sure! I have updated the memory as you asked."),
    ("prose-with-braces", "I would store {the user's name} and {their city}."),
    ("broken-json", '{"history_entry": "x", '),
    ("json-list", "[1, 2, 3]"),
    ("json-string", '"just a string"'),
    ("json-null", "null"),
    ("fenced-prose", "```\nno JSON in here\n```"),
    ("fenced-list", "```json\n[]\n```"),
]


def _talk(db: Any, pairs: int = 30) -> None:
    for i in range(pairs):
        when = T0 + timedelta(minutes=2 * i)
        db.history.append("s", Message(role="user", content=f"q{i}", created_at=when))
        db.history.append(
            "s", Message(role="assistant", content=f"a{i}", created_at=when + timedelta(minutes=1))
        )


def _workspace_state(db: Any) -> Any:
    every = db.history.get_all("s", include_archived=True)
    active = [m.seq for m in db.history.get_all("s")]
    docs = {info.path: db.docs.read(info.path).content for info in db.docs.list()}
    revisions = {path: db.docs.revisions(path) for path in docs}
    return len(every), active, db.history.get_summary("s"), docs, revisions


# -- Consolidator ------------------------------------------------------------------------

CONSOLIDATION = {"history_entry": "Talked about questions.", "memory_update": "# Memory\n- new"}
BAD_CONSOLIDATION = [
    *BAD_COMMON,
    ("wrong-type-entry", json.dumps({"history_entry": 3, "memory_update": ""})),
    ("wrong-type-memory", json.dumps({"history_entry": "x", "memory_update": ["a"]})),
    ("missing-entry", json.dumps({"memory_update": "# Memory"})),
    ("blank-entry", json.dumps({"history_entry": " ", "memory_update": "# Memory"})),
    ("fenced-wrong-shape", _fenced({"history_entry": 3})),
    ("surrogates", '{"history_entry": "\\ud800", "memory_update": ""}'),
]


@pytest.mark.parametrize("answer", [a for _, a in BAD_CONSOLIDATION],
                         ids=[n for n, _ in BAD_CONSOLIDATION])  # fmt: skip
def test_consolidator_bad_answers_change_nothing(ws: Any, answer: Any) -> None:
    ws.docs.write("MEMORY.md", "# Memory\n- old")
    _talk(ws)
    before = _workspace_state(ws)
    result = Consolidator(ws, _model(answer)).maybe_consolidate("s")
    assert not result.consolidated and result.archived == 0 and not result.memory_updated
    assert isinstance(result.error, str) and result.error
    assert _workspace_state(ws) == before


GOOD_CONSOLIDATION = [
    ("bare", json.dumps(CONSOLIDATION)),
    ("fenced", _fenced(CONSOLIDATION)),
    ("fenced-no-language", _fenced(CONSOLIDATION, lang="")),
    ("fenced-upper", _fenced(CONSOLIDATION, lang="JSON")),
    ("prose-then-json", "Here is the update:\n" + json.dumps(CONSOLIDATION)),
    ("prose-then-fence", "Here you go:\n" + _fenced(CONSOLIDATION) + "\nAnything else?"),
]


@pytest.mark.parametrize("answer", [a for _, a in GOOD_CONSOLIDATION],
                         ids=[n for n, _ in GOOD_CONSOLIDATION])  # fmt: skip
def test_consolidator_wrapped_json_completes_as_bare_json(ws: Any, answer: str) -> None:
    _talk(ws)
    result = Consolidator(ws, _model(answer)).maybe_consolidate("s")
    assert result.error is None and result.consolidated and result.memory_updated
    assert result.archived == 50 and ws.history.count("s") == 10
    line = f"[{T0 + timedelta(minutes=49):%Y-%m-%d %H:%M}] Talked about questions."
    assert ws.docs.read("HISTORY.md").content == line == result.history_entry
    assert ws.docs.read("MEMORY.md").content == "# Memory\n- new"


# -- consolidate_daily_notes -------------------------------------------------------------

DAILY = {"should_update": True, "reason": "new", "memory_content": "# Memory\n- merged"}
BAD_DAILY = [
    *BAD_COMMON,
    ("wrong-type-flag", json.dumps({"should_update": "yes", "memory_content": "x"})),
    ("missing-flag", json.dumps({"memory_content": "x"})),
    ("wrong-type-content", json.dumps({"should_update": True, "memory_content": 5})),
    ("blank-content", json.dumps({"should_update": True, "memory_content": "  "})),
    ("fenced-wrong-shape", _fenced({"should_update": 1, "memory_content": "x"})),
]


def _notes(db: Any) -> None:
    db.docs.write("MEMORY.md", "# Memory\n- old")
    for i in range(3):
        db.docs.append_daily(f"note {i}", day=date(2026, 3, 1) + timedelta(days=i))


@pytest.mark.parametrize("answer", [a for _, a in BAD_DAILY], ids=[n for n, _ in BAD_DAILY])
def test_daily_notes_bad_answers_change_nothing(ws: Any, answer: Any) -> None:
    _notes(ws)
    before = _workspace_state(ws)
    result = consolidate_daily_notes(ws, _model(answer))
    assert not result.consolidated and not result.memory_updated
    assert isinstance(result.error, str) and result.error
    assert _workspace_state(ws) == before


@pytest.mark.parametrize(
    "answer",
    [json.dumps(DAILY), _fenced(DAILY), "Merged:\n" + _fenced(DAILY, lang="")],
    ids=["bare", "fenced", "prose-then-fence"],
)
def test_daily_notes_wrapped_json_completes_as_bare_json(ws: Any, answer: str) -> None:
    _notes(ws)
    result = consolidate_daily_notes(ws, _model(answer))
    assert result.error is None and result.consolidated and result.memory_updated
    assert ws.docs.read("MEMORY.md").content == "# Memory\n- merged"
    assert ws.docs.read_revision("MEMORY.md", 1) == "# Memory\n- old"


# -- WorkspaceExtractor ------------------------------------------------------------------

EXTRACTION = {
    "should_update": True,
    "reason": "learned things",
    "daily_entry": "User planned a trip to Oslo",
    "memory_update": "# Memory\n- trip to Oslo",
    "profile_update": "",
}
BAD_EXTRACTION = [
    *BAD_COMMON,
    ("wrong-type-flag", json.dumps({**EXTRACTION, "should_update": "true"})),
    ("missing-flag", json.dumps({k: v for k, v in EXTRACTION.items() if k != "should_update"})),
    ("wrong-type-field", json.dumps({**EXTRACTION, "memory_update": {"a": 1}})),
    ("fenced-wrong-shape", _fenced({**EXTRACTION, "daily_entry": 7})),
]


def _conversation(db: Any) -> None:
    for role, text in [
        ("user", "I want to plan a trip to Oslo"),
        ("assistant", "Sure!"),
        ("user", "In winter please"),
        ("assistant", "Noted"),
    ]:
        db.history.append("s", Message(role=role, content=text))


@pytest.mark.parametrize("answer", [a for _, a in BAD_EXTRACTION],
                         ids=[n for n, _ in BAD_EXTRACTION])  # fmt: skip
def test_extractor_bad_answers_change_nothing(ws: Any, answer: Any) -> None:
    _conversation(ws)
    ws.docs.write("MEMORY.md", "# Memory\n- old")
    before = _workspace_state(ws)
    outcome = WorkspaceExtractor(ws, _model(answer), cooldown_seconds=0).run("s")
    assert outcome.ran and outcome.updated == []
    assert isinstance(outcome.error, str) and outcome.error
    assert _workspace_state(ws) == before


@pytest.mark.parametrize(
    "answer",
    [json.dumps(EXTRACTION), _fenced(EXTRACTION), "OK.\n" + _fenced(EXTRACTION, lang="")],
    ids=["bare", "fenced", "prose-then-fence"],
)
def test_extractor_wrapped_json_completes_as_bare_json(ws: Any, answer: str) -> None:
    _conversation(ws)
    outcome = WorkspaceExtractor(ws, _model(answer), cooldown_seconds=0).run("s")
    note = f"memory/{datetime.now(timezone.utc).date():%Y-%m-%d}.md"
    assert outcome.error is None and outcome.updated == [note, "MEMORY.md"]
    assert ws.docs.read("MEMORY.md").content == "# Memory\n- trip to Oslo"
    assert ws.docs.read(note).content.endswith("User planned a trip to Oslo")
