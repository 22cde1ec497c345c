"""Issue 17: `ContextWindow.build` never returns a window over `max_input_tokens`, unless
the system prompt plus the new message alone exceed it (then it returns just those two and
says so in `over_limit`). Checked over generated sessions (tool calls and their results,
long and short messages), summaries, documents, limits, trigger ratios and summarizers
that answer short, answer long or raise, on the SQLite history store and the twin.

And the window never forgets: whatever it archives is covered by the summarizer's new
summary or by a consolidator's HISTORY.md entry (with neither, or when they fail, it
archives nothing)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmem
import sqlmem.inmemory
from sqlmem import Consolidator, Message, ToolCall
from sqlmem.context import SUMMARY_PREFIX, ContextWindow
from sqlmem.context.compactor import message_tokens


def _chars(text: str) -> int:
    return len(text)


turn = st.tuples(
    st.integers(0, 120),  # user text length
    st.integers(0, 120),  # answer length
    st.booleans(),  # with a tool call and its result
)


class _Files:
    def __init__(self, text: str) -> None:
        self.text = text

    def render_files(self) -> str:
        return self.text


def _summarizer(kind: str) -> Any:
    def summarize(messages: list[Message], previous: str) -> str:
        if kind == "raises":
            raise TimeoutError("summarizer timed out")
        return "s" * (10 if kind == "short" else 2_000)

    return None if kind == "none" else summarize


def _consolidator(db: Any, kind: str) -> Consolidator | None:
    def complete(prompt: str) -> str:
        if kind == "fails":
            raise ConnectionError("consolidation model down")
        return json.dumps({"history_entry": "They talked.", "memory_update": ""})

    return None if kind == "none" else Consolidator(db, complete)


def _fill(history: Any, turns: list[tuple[int, int, bool]]) -> None:
    for i, (asked, answered, tool) in enumerate(turns):
        history.append("s", Message(role="user", content=f"q{i} " + "q" * asked))
        if tool:
            call = ToolCall(id=f"c{i}", name="lookup", arguments="{}")
            history.append("s", Message(role="assistant", content="", tool_calls=[call]))
            history.append("s", Message(role="tool", tool_call_id=f"c{i}", content="t" * answered))
        history.append("s", Message(role="assistant", content=f"a{i} " + "a" * answered))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(turn, max_size=12),
    summary=st.sampled_from(["", "a short summary", "z" * 300]),
    system=st.sampled_from(["", "sys", "p" * 150, "p" * 600]),
    files=st.sampled_from(["", "--- MEMORY.md ---\nfacts\n", "--- AGENTS.md ---\n" + "r" * 250]),
    new=st.sampled_from(["now?", "n" * 200]),
    limit=st.integers(20, 1_500),
    ratio=st.sampled_from([0.1, 0.5, 0.75, 1.0]),
    pairs=st.integers(1, 3),
    summarizer=st.sampled_from(["none", "short", "long", "raises"]),
    consolidator=st.sampled_from(["none", "works", "fails"]),
    kind=st.sampled_from(["sqlite", "memory"]),
)
def test_the_window_never_exceeds_the_limit_but_in_the_stated_case(
    turns: list[tuple[int, int, bool]],
    summary: str,
    system: str,
    files: str,
    new: str,
    limit: int,
    ratio: float,
    pairs: int,
    summarizer: str,
    consolidator: str,
    kind: str,
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db: Any = sqlmem.open(Path(folder) / "m.db") if kind == "sqlite" else sqlmem.inmemory.open()
        history: Any = db.history
        try:
            _fill(history, turns)
            if summary:
                history.set_summary("s", summary)
            window = ContextWindow(
                history,
                max_input_tokens=limit,
                trigger_ratio=ratio,
                preserve_recent_pairs=pairs,
                summarizer=_summarizer(summarizer),
                estimator=_chars,
                consolidator=_consolidator(db, consolidator),
            )
            before = history.count("s")
            built = window.build("s", system, new, docs=_Files(files))
            archived = before - history.count("s")
            summary_after = history.get_summary("s")
            entry = db.docs.read("HISTORY.md")
        finally:
            db.close()
    assert archived == 0 or built.compacted
    if archived:  # only under a record that covers what was archived
        by_summary = summarizer in ("short", "long") and summary_after.startswith("s" * 10)
        by_entry = entry is not None and summary_after == entry.content.splitlines()[-1]
        assert by_summary or (
            consolidator == "works" and by_entry and "They talked." in entry.content
        )
    if summarizer in ("none", "raises") and consolidator in ("none", "fails"):
        assert archived == 0
    messages = built.messages
    assert built.tokens == sum(message_tokens(m, _chars) for m in messages)
    assert built.over_limit == (built.tokens > limit)
    head, last = messages[0], messages[-1]
    alone = message_tokens(head, _chars) + message_tokens(last, _chars)
    if built.over_limit:  # the stated case, and nothing else sent
        assert alone > limit and len(messages) == 2
    assert alone > limit or built.tokens <= limit
    assert head.role == "system" and [m.role for m in messages].count("system") == 1
    assert last.role == "user" and last.content == new
    middle = messages[1:-1]
    if middle and middle[0].content.startswith(SUMMARY_PREFIX):
        assert middle[0].role == "user"  # the summary never gains system authority
        middle = middle[1:]
    assert not middle or middle[0].role != "tool"  # never a result without its call
    called = {c.id for m in middle for c in m.tool_calls}
    assert all(m.tool_call_id in called for m in middle if m.role == "tool")
    if summarizer == "raises" and built.compacted:
        assert built.error and "TimeoutError" in built.error
