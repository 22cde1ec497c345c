"""SPEC 15: `ContextWindow` over both history stores: the prompt's layout, compaction past
the trigger, trimming past the limit, `emergency`, and failures reported, never raised."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sqlmem import InvalidArgumentError, Message, ToolCall
from sqlmem.context import SUMMARY_PREFIX, BuiltContext, ContextWindow
from sqlmem.context.compactor import message_tokens
from sqlmem.protocols import HistoryStore

MakeHistory = Callable[..., HistoryStore]  # the `make_history` fixture (conftest.py)


def _chars(text: str) -> int:
    return len(text)


def _turns(history: HistoryStore, session: str, count: int, size: int = 40) -> None:
    for i in range(count):
        history.append(session, Message(role="user", content=f"question {i} " + "q" * size))
        history.append(session, Message(role="assistant", content=f"answer {i} " + "a" * size))


class _Files:
    def __init__(self, text: str) -> None:
        self.text = text

    def render_files(self) -> str:
        return self.text


def test_layout_under_the_limit(history: HistoryStore) -> None:
    _turns(history, "s", 2)
    history.set_summary("s", "They talked about tea.")
    window = ContextWindow(history)
    built = window.build("s", "You are helpful.", "and now?", docs=_Files("--- MEMORY.md ---\nx\n"))
    assert isinstance(built, BuiltContext)
    roles = [m.role for m in built.messages]
    assert roles == ["system", "user", "user", "assistant", "user", "assistant", "user"]
    assert built.messages[0].content == "You are helpful.\n\n--- MEMORY.md ---\nx\n"
    assert built.messages[1].content == f"{SUMMARY_PREFIX}\nThey talked about tea."
    assert built.messages[-1].content == "and now?"
    assert roles.count("system") == 1  # the summary never gains system authority
    assert not built.compacted and built.trimmed == 0 and built.error is None
    assert built.tokens == sum(message_tokens(m) for m in built.messages)
    assert history.count("s") == 4  # building stores nothing


def test_no_docs_no_summary(history: HistoryStore) -> None:
    built = ContextWindow(history).build("new", "sys", Message(role="user", content="hi"))
    assert [(m.role, m.content) for m in built.messages] == [("system", "sys"), ("user", "hi")]
    built = ContextWindow(history).build("new", "sys", "hi", docs=_Files(""))
    assert built.messages[0].content == "sys"


def test_past_the_trigger_older_turns_are_summarized_and_archived(
    history: HistoryStore,
) -> None:
    _turns(history, "s", 6)
    seen: list[Any] = []

    def summarizer(messages: list[Message], previous: str) -> str:
        seen.append(([m.content for m in messages], previous))
        return "summary of the early turns"

    window = ContextWindow(history, max_input_tokens=600, summarizer=summarizer, estimator=_chars)
    built = window.build("s", "sys", "next question")
    assert built.compacted and built.error is None
    assert len(seen) == 1 and len(seen[0][0]) == 8  # turns 0-3 summarized
    assert history.count("s") == 4  # the last 2 user turns stay active
    assert history.get_all("s")[0].content.startswith("question 4 ")
    assert history.get_summary("s") == "summary of the early turns"
    assert built.messages[1].content == f"{SUMMARY_PREFIX}\nsummary of the early turns"
    assert len(history.get_all("s", include_archived=True)) == 12  # nothing lost


def test_a_failing_summarizer_is_reported_not_raised_and_archives_nothing(
    history: HistoryStore,
) -> None:
    _turns(history, "s", 6)

    def broken(messages: list[Message], previous: str) -> str:
        raise RuntimeError("model down")

    window = ContextWindow(history, max_input_tokens=600, summarizer=broken, estimator=_chars)
    built = window.build("s", "sys", "next")
    assert not built.compacted  # no record would cover them: they stay active
    assert built.error is not None and "model down" in built.error
    assert history.count("s") == 12
    assert history.get_summary("s") == ""
    assert built.tokens <= 600 and built.trimmed > 0  # left out of this prompt only
    assert built.messages[-3].content.startswith("question 5 ")


def test_without_a_summarizer_nothing_is_archived(history: HistoryStore) -> None:
    _turns(history, "s", 6)
    built = ContextWindow(history, max_input_tokens=600, estimator=_chars).build("s", "sys", "n")
    assert not built.compacted and built.error is None
    assert history.count("s") == 12 and built.tokens <= 600


def test_archive_uncovered_keeps_the_older_rule(history: HistoryStore) -> None:
    _turns(history, "s", 6)

    def broken(messages: list[Message], previous: str) -> str:
        raise RuntimeError("model down")

    window = ContextWindow(
        history,
        max_input_tokens=600,
        summarizer=broken,
        estimator=_chars,
        archive_uncovered=True,
    )
    built = window.build("s", "sys", "next")
    assert built.compacted
    assert built.error is not None and "model down" in built.error
    assert history.count("s") == 4
    assert history.get_summary("s") == ""
    assert ContextWindow(history, archive_uncovered=True).build("s", "s", "x").error is None


def test_past_the_limit_the_oldest_messages_are_left_out_of_the_prompt_only(
    history: HistoryStore,
) -> None:
    history.append("s", Message(role="user", content="u" * 100))
    history.append(
        "s",
        Message(
            role="assistant",
            content="",
            tool_calls=[ToolCall(id="c1", name="lookup", arguments="{}")],
        ),
    )
    history.append("s", Message(role="tool", content="t" * 100, tool_call_id="c1"))
    history.append("s", Message(role="assistant", content="a" * 100))
    history.append("s", Message(role="user", content="last turn " + "v" * 100))
    history.append("s", Message(role="assistant", content="b" * 50))
    # preserve 2 turns: nothing to compact, so only trimming can help
    window = ContextWindow(history, max_input_tokens=300, estimator=_chars)
    built = window.build("s", "sys", "now")
    contents = [m.content for m in built.messages]
    assert contents[-3:] == ["last turn " + "v" * 100, "b" * 50, "now"]
    assert built.messages[1].role != "tool"  # never a result without its call
    assert built.trimmed >= 3
    assert built.tokens == sum(message_tokens(m, _chars) for m in built.messages)
    assert built.tokens <= 300
    assert history.count("s") == 6  # trimming archives nothing


def test_the_window_fits_unless_system_and_new_message_alone_do_not(
    history: HistoryStore,
) -> None:
    history.append("s", Message(role="user", content="x" * 500))
    history.append("s", Message(role="assistant", content="y" * 50))
    history.set_summary("s", "z" * 80)
    window = ContextWindow(history, max_input_tokens=100, estimator=_chars)
    built = window.build("s", "sys", "now")
    # every history message and then the summary left out: it fits
    assert [m.content for m in built.messages] == ["sys", "now"]
    assert built.trimmed == 3 and not built.over_limit and built.tokens <= 100
    big = window.build("s", "s" * 200, "now")  # the system prompt alone is too long
    assert [m.content for m in big.messages] == ["s" * 200, "now"]
    assert big.over_limit and big.tokens > 100
    roomy = window.build("s", "sys", "now", docs=None)
    assert roomy.tokens <= 100


@pytest.mark.parametrize("limit", [60, 120, 200, 300, 400, 600, 1000])
def test_the_window_never_exceeds_the_limit(history: HistoryStore, limit: int) -> None:
    _turns(history, "s", 8, size=30)
    history.set_summary("s", "a summary " * 5)
    window = ContextWindow(history, max_input_tokens=limit, estimator=_chars)
    built = window.build("s", "sys", "the new question")
    assert built.tokens == sum(message_tokens(m, _chars) for m in built.messages)
    assert built.tokens <= limit or built.over_limit
    assert built.messages[-1].content == "the new question"
    assert all(m.role != "tool" for m in built.messages[1:2])


def test_emergency_keeps_the_last_turns_and_calls_no_model(history: HistoryStore) -> None:
    _turns(history, "s", 5)
    history.set_summary("s", "old summary")

    def must_not_run(messages: list[Message], previous: str) -> str:
        raise AssertionError("emergency must not call the model")

    window = ContextWindow(history, summarizer=must_not_run, preserve_recent_pairs=1)
    result = window.emergency("s")
    assert result.compacted and result.archived == 8
    assert [m.role for m in history.get_all("s")] == ["user", "assistant"]
    assert history.get_summary("s") == "old summary"
    assert not window.emergency("s").compacted  # nothing more to archive


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_input_tokens": 0},
        {"max_input_tokens": True},
        {"trigger_ratio": 0},
        {"trigger_ratio": 1.5},
        {"trigger_ratio": "0.5"},
        {"preserve_recent_pairs": 0},
        {"summarizer": 3},
        {"estimator": "len"},
        {"consolidator": "complete"},
        {"archive_uncovered": 1},
    ],
)
def test_bad_arguments_raise(make_history: MakeHistory, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError):
        ContextWindow(make_history(), **kwargs)


def test_bad_build_arguments_raise(history: HistoryStore) -> None:
    window = ContextWindow(history)
    with pytest.raises(InvalidArgumentError):
        window.build("s", None, "x")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        window.build("s", "sys", 3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        window.build("", "sys", "x")
