"""Compactor over both history stores: thresholds, summaries, failures, pair safety."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sqlmem
from sqlmem.context.compactor import (
    CompactionResult,
    Compactor,
    message_tokens,
    pair_safe_boundary,
)
from sqlmem.errors import InvalidArgumentError, StorageBusyError
from sqlmem.protocols import HistoryStore
from sqlmem.records import Message, ToolCall

S = "chat:1"


@pytest.fixture(params=["memory", "sqlite"])
def history(
    request: pytest.FixtureRequest, open_db: Callable[..., sqlmem.MemoryDB]
) -> HistoryStore:
    if request.param == "memory":
        from sqlmem.inmemory.history import InMemoryHistoryStore

        return InMemoryHistoryStore()
    return open_db().history


def chat(history: HistoryStore, n: int, start: int = 0, session: str = S) -> list[str]:
    """Append n alternating user/assistant messages; their contents."""
    contents = [f"message {i}" for i in range(start, start + n)]
    history.append_many(
        session,
        [
            Message(role="user" if i % 2 == 0 else "assistant", content=c)
            for i, c in enumerate(contents, start)
        ],
    )
    return contents


def tool_exchange(n_results: int = 2) -> list[Message]:
    calls = [
        ToolCall(id=f"call{i}", name="lookup", arguments=f'{{"i":{i}}}') for i in range(n_results)
    ]
    return [
        Message(role="assistant", content="", tool_calls=calls),
        *(
            Message(role="tool", content=f"result {i}", tool_call_id=f"call{i}")
            for i in range(n_results)
        ),
    ]


class Recorder:
    """A summarizer that records what it was given."""

    def __init__(self, reply: Any = "SUMMARY") -> None:
        self.reply = reply
        self.calls: list[tuple[list[Message], str]] = []

    def __call__(self, messages: list[Message], previous: str) -> str:
        self.calls.append((messages, previous))
        if isinstance(self.reply, BaseException):
            raise self.reply
        return self.reply  # type: ignore[no-any-return]


def contents(messages: list[Message]) -> list[str]:
    return [m.content for m in messages]


def archived_part(history: HistoryStore, session: str = S) -> list[Message]:
    every = history.get_all(session, include_archived=True)
    return every[: len(every) - history.count(session)]


# -- arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"threshold": 0, "retain_recent": 0, "emergency_retain": 0}, "threshold"),
        ({"threshold": 10, "retain_recent": -1, "emergency_retain": 0}, "retain_recent"),
        ({"threshold": 10, "retain_recent": 10, "emergency_retain": 2}, "retain_recent"),
        ({"threshold": 10, "retain_recent": 12, "emergency_retain": 2}, "retain_recent"),
        ({"threshold": 10, "retain_recent": 5, "emergency_retain": -1}, "emergency_retain"),
        ({"threshold": 10, "retain_recent": 5, "emergency_retain": 6}, "emergency_retain"),
        (
            {"threshold": 10, "retain_recent": 5, "emergency_retain": 2, "token_threshold": 0},
            "token_threshold",
        ),
        ({"threshold": "10", "retain_recent": 5, "emergency_retain": 2}, "threshold"),
        ({"threshold": True, "retain_recent": 0, "emergency_retain": 0}, "threshold"),
        ({"threshold": 10, "retain_recent": 5.0, "emergency_retain": 2}, "retain_recent"),
    ],
)
def test_invalid_arguments_are_named(
    history: HistoryStore, kwargs: dict[str, Any], named: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=named):
        Compactor(history, **kwargs)


def test_non_callable_summarizer_is_refused(history: HistoryStore) -> None:
    with pytest.raises(InvalidArgumentError, match="summarizer"):
        Compactor(history, "not callable")  # type: ignore[arg-type]


def test_defaults_are_consistent(history: HistoryStore) -> None:
    c = Compactor(history)
    assert c.emergency_retain <= c.retain_recent < c.threshold


# -- when to compact ---------------------------------------------------------------------


def test_at_threshold_nothing_happens(history: HistoryStore) -> None:
    chat(history, 10)
    summarize = Recorder()
    result = Compactor(
        history, summarize, threshold=10, retain_recent=4, emergency_retain=2
    ).maybe_compact(S)
    assert result == CompactionResult(compacted=False, archived=0, summarized=False, error=None)
    assert history.count(S) == 10
    assert summarize.calls == []


def test_past_threshold_keeps_retain_recent_and_summarizes_exactly_the_archived(
    history: HistoryStore,
) -> None:
    sent = chat(history, 11)
    history.set_summary(S, "earlier summary")
    summarize = Recorder("new summary")
    c = Compactor(history, summarize, threshold=10, retain_recent=4, emergency_retain=2)

    result = c.maybe_compact(S)

    assert result == CompactionResult(compacted=True, archived=7, summarized=True, error=None)
    assert contents(history.get_all(S)) == sent[7:]
    assert len(summarize.calls) == 1
    given, previous = summarize.calls[0]
    assert previous == "earlier summary"
    assert contents(given) == sent[:7] == contents(archived_part(history))
    assert history.get_summary(S) == "new summary"


def test_second_compaction_folds_the_previous_summary(history: HistoryStore) -> None:
    summarize = Recorder("first")
    c = Compactor(history, summarize, threshold=5, retain_recent=2, emergency_retain=1)
    chat(history, 6)
    assert c.maybe_compact(S).archived == 4
    summarize.reply = "second"
    chat(history, 4, start=6)
    assert c.maybe_compact(S).archived == 4
    assert [prev for _, prev in summarize.calls] == ["", "first"]
    assert contents(summarize.calls[1][0]) == ["message 4", "message 5", "message 6", "message 7"]
    assert history.get_summary(S) == "second"
    assert len(history.get_all(S, include_archived=True)) == 10


def test_unknown_session_does_nothing(history: HistoryStore) -> None:
    c = Compactor(history, Recorder(), threshold=2, retain_recent=1, emergency_retain=0)
    assert not c.maybe_compact("nobody").compacted
    assert not c.emergency_compact("nobody").compacted


def test_other_sessions_are_untouched(history: HistoryStore) -> None:
    chat(history, 8)
    other = chat(history, 8, session="chat:2")
    Compactor(history, threshold=5, retain_recent=2, emergency_retain=1).maybe_compact(S)
    assert history.count(S) == 2
    assert contents(history.get_all("chat:2")) == other


def test_token_threshold_triggers_below_the_count_threshold(history: HistoryStore) -> None:
    history.append_many(S, [Message(role="user", content="x" * 400) for _ in range(5)])
    c = Compactor(history, threshold=50, retain_recent=2, emergency_retain=1, token_threshold=300)
    # 5 * (4 overhead + 100 tokens) = 520 > 300.
    result = c.maybe_compact(S)
    assert result.compacted and result.archived == 3
    assert history.count(S) == 2


def test_token_threshold_not_reached(history: HistoryStore) -> None:
    chat(history, 5)
    c = Compactor(
        history, threshold=50, retain_recent=2, emergency_retain=1, token_threshold=10_000
    )
    assert not c.maybe_compact(S).compacted
    assert history.count(S) == 5


def test_custom_estimator_is_used_for_the_token_threshold(history: HistoryStore) -> None:
    chat(history, 3)
    c = Compactor(
        history,
        threshold=50,
        retain_recent=1,
        emergency_retain=0,
        token_threshold=1000,
        estimator=lambda text: 1000,
    )
    assert c.maybe_compact(S).archived == 2


def test_message_tokens_counts_tool_calls() -> None:
    plain = Message(role="assistant", content="abcd")
    calling = Message(
        role="assistant",
        content="abcd",
        tool_calls=[ToolCall(id="c", name="search", arguments='{"q": "tea"}')],
    )
    assert message_tokens(plain) == 4 + 1
    assert message_tokens(calling) == 4 + 1 + 2 + 3
    assert message_tokens(plain, estimator=len) == 8


# -- emergency ---------------------------------------------------------------------------


def test_emergency_keeps_only_emergency_retain_whatever_the_threshold(
    history: HistoryStore,
) -> None:
    sent = chat(history, 6)
    summarize = Recorder("emergency summary")
    c = Compactor(history, summarize, threshold=100, retain_recent=10, emergency_retain=2)
    result = c.emergency_compact(S)
    assert result == CompactionResult(compacted=True, archived=4, summarized=True, error=None)
    assert contents(history.get_all(S)) == sent[4:]
    assert contents(summarize.calls[0][0]) == sent[:4]
    assert history.get_summary(S) == "emergency summary"


def test_emergency_with_zero_retain_archives_everything(history: HistoryStore) -> None:
    chat(history, 3)
    c = Compactor(history, threshold=5, retain_recent=0, emergency_retain=0)
    assert c.emergency_compact(S).archived == 3
    assert history.count(S) == 0
    assert history.get_recent(S, 10) == []


# -- summarizer failures -----------------------------------------------------------------


def test_without_summarizer_archives_and_keeps_previous_summary(history: HistoryStore) -> None:
    chat(history, 6)
    history.set_summary(S, "kept")
    result = Compactor(history, threshold=5, retain_recent=2, emergency_retain=1).maybe_compact(S)
    assert result == CompactionResult(compacted=True, archived=4, summarized=False, error=None)
    assert history.get_summary(S) == "kept"


@pytest.mark.parametrize(
    ("reply", "reported"),
    [
        (RuntimeError("model unavailable"), "summarizer failed: RuntimeError: model unavailable"),
        (ValueError("bad"), "summarizer failed: ValueError: bad"),
        ("", "blank"),
        ("   \n\t", "blank"),
        (None, "NoneType"),
        ("half \ud800 a surrogate", "surrogate"),
    ],
)
def test_failing_summarizer_archives_without_summary_and_reports(
    history: HistoryStore, caplog: pytest.LogCaptureFixture, reply: Any, reported: str
) -> None:
    sent = chat(history, 6)
    history.set_summary(S, "previous")
    c = Compactor(history, Recorder(reply), threshold=5, retain_recent=2, emergency_retain=1)

    with caplog.at_level(logging.WARNING, logger="sqlmem"):
        result = c.maybe_compact(S)

    assert result.compacted and result.archived == 4 and not result.summarized
    assert result.error is not None and reported in result.error
    assert history.get_summary(S) == "previous"
    assert contents(history.get_all(S)) == sent[4:]
    assert contents(history.get_all(S, include_archived=True)) == sent
    assert any(r.name == "sqlmem" and reported in r.getMessage() for r in caplog.records)


def test_failing_summarizer_in_emergency_still_archives(history: HistoryStore) -> None:
    chat(history, 6)
    c = Compactor(
        history, Recorder(RuntimeError("down")), threshold=5, retain_recent=2, emergency_retain=1
    )
    result = c.emergency_compact(S)
    assert result.archived == 5 and not result.summarized and result.error


def test_keyboard_interrupt_in_summarizer_propagates_and_moves_nothing(
    history: HistoryStore,
) -> None:
    chat(history, 6)
    c = Compactor(
        history, Recorder(KeyboardInterrupt()), threshold=5, retain_recent=2, emergency_retain=1
    )
    with pytest.raises(KeyboardInterrupt):
        c.maybe_compact(S)
    assert history.count(S) == 6


# -- storage failures --------------------------------------------------------------------


class BusyOnCompact:
    """Delegates to a real store, but `compact` fails as if the lock were held too long."""

    def __init__(self, inner: HistoryStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def compact(self, session_id: str, keep_last: int, summary: str | None = None) -> int:
        raise StorageBusyError("database is busy")


def test_storage_error_is_reported_not_raised(
    history: HistoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    chat(history, 6)
    busy: Any = BusyOnCompact(history)
    c = Compactor(busy, Recorder(), threshold=5, retain_recent=2, emergency_retain=1)
    with caplog.at_level(logging.WARNING, logger="sqlmem"):
        result = c.maybe_compact(S)
    assert result == CompactionResult(
        compacted=False,
        archived=0,
        summarized=False,
        error="storage failed: StorageBusyError: database is busy",
    )
    assert history.count(S) == 6
    assert any("StorageBusyError" in r.getMessage() for r in caplog.records)


class RefusesSummaries(BusyOnCompact):
    """`compact` refuses any summary, as a store with a size limit might."""

    def compact(self, session_id: str, keep_last: int, summary: str | None = None) -> int:
        if summary is not None:
            raise InvalidArgumentError("summary: too large")
        return self.inner.compact(session_id, keep_last, summary)


def test_summary_refused_by_the_store_archives_without_it(history: HistoryStore) -> None:
    chat(history, 6)
    history.set_summary(S, "previous")
    refusing: Any = RefusesSummaries(history)
    c = Compactor(refusing, Recorder(), threshold=5, retain_recent=2, emergency_retain=1)
    result = c.maybe_compact(S)
    assert result == CompactionResult(
        compacted=True,
        archived=4,
        summarized=False,
        error="store refused the summary: summary: too large",
    )
    assert history.get_summary(S) == "previous"


def test_closed_store_is_reported_not_raised(open_db: Callable[..., sqlmem.MemoryDB]) -> None:
    db = open_db()
    chat(db.history, 6)
    c = Compactor(db.history, threshold=5, retain_recent=2, emergency_retain=1)
    db.close()
    result = c.maybe_compact(S)
    assert not result.compacted
    assert result.error is not None and "StoreClosedError" in result.error


def test_invalid_session_id_is_a_caller_bug_and_raises(history: HistoryStore) -> None:
    c = Compactor(history, threshold=5, retain_recent=2, emergency_retain=1)
    with pytest.raises(InvalidArgumentError):
        c.maybe_compact("")
    with pytest.raises(InvalidArgumentError):
        c.emergency_compact("")


# -- pair safety -------------------------------------------------------------------------


def test_boundary_never_separates_tool_results_from_their_call(history: HistoryStore) -> None:
    history.append_many(
        S,
        [
            Message(role="user", content="q1"),
            Message(role="assistant", content="a1"),
            Message(role="user", content="q2"),
            *tool_exchange(3),  # seq 4 (call), 5, 6, 7 (results)
            Message(role="assistant", content="a2"),
        ],
    )
    summarize = Recorder()
    c = Compactor(history, summarize, threshold=5, retain_recent=2, emergency_retain=1)
    # Keeping the last 2 would start the window at a tool result: keep the call too.
    result = c.maybe_compact(S)
    active = history.get_all(S)
    assert active[0].role == "assistant" and active[0].tool_calls
    assert [m.role for m in active] == ["assistant", "tool", "tool", "tool", "assistant"]
    assert result.archived == 3
    assert contents(summarize.calls[0][0]) == ["q1", "a1", "q2"]
    assert contents(archived_part(history)) == ["q1", "a1", "q2"]


def test_emergency_is_pair_safe_too(history: HistoryStore) -> None:
    history.append_many(S, [Message(role="user", content="q"), *tool_exchange(2)])
    summarize = Recorder()
    c = Compactor(history, summarize, threshold=5, retain_recent=2, emergency_retain=1)
    result = c.emergency_compact(S)
    assert result.archived == 1
    assert contents(summarize.calls[0][0]) == ["q"]
    assert [m.role for m in history.get_all(S)] == ["assistant", "tool", "tool"]


def test_nothing_archivable_does_not_call_the_summarizer(history: HistoryStore) -> None:
    history.append_many(S, tool_exchange(6))  # call + 6 results: only the call can lead
    summarize = Recorder()
    c = Compactor(history, summarize, threshold=5, retain_recent=2, emergency_retain=1)
    assert c.maybe_compact(S) == CompactionResult(False, 0, False, None)
    assert summarize.calls == []
    assert history.count(S) == 7


@pytest.mark.parametrize(
    ("roles", "keep", "boundary"),
    [
        ([], 3, 0),
        (["user", "assistant"], 5, 0),
        (["user", "assistant", "user"], 0, 3),
        (["user", "assistant", "tool", "tool", "user"], 2, 1),
        (["user", "assistant", "tool", "tool", "user"], 1, 4),
        (["user", "assistant", "tool", "tool", "user"], 3, 1),
        (["user", "assistant", "tool", "tool", "user"], -1, 5),
        (["tool", "tool", "user"], 2, 1),
        (["tool", "tool", "tool", "user"], 2, 2),
        (["tool", "user", "tool", "user"], 2, 1),
    ],
)
def test_pair_safe_boundary(roles: list[str], keep: int, boundary: int) -> None:
    messages = [Message.model_validate({"role": r}) for r in roles]
    assert pair_safe_boundary(messages, keep) == boundary


_ROLES = st.sampled_from(["user", "assistant", "call", "tool"])
_sessions = iter(range(10**9))


@given(roles=st.lists(_ROLES, max_size=12), keep=st.integers(0, 13), prior=st.integers(0, 6))
def test_summarizer_gets_exactly_what_the_store_archives(
    history: HistoryStore, roles: list[str], keep: int, prior: int
) -> None:
    """Whatever the mix of roles (orphan tool results included) and however much was
    archived before, the summarizer sees exactly the messages `compact` archives."""
    session = f"prop:{next(_sessions)}"
    history.append_many(
        session,
        [
            Message(role="assistant", content=f"m{i}", tool_calls=[ToolCall(id=f"c{i}", name="f")])
            if role == "call"
            else Message.model_validate({"role": role, "content": f"m{i}"})
            for i, role in enumerate(roles)
        ],
    )
    history.compact(session, keep_last=max(len(roles) - prior, 0))
    before = history.get_all(session)
    summarize = Recorder()
    c = Compactor(history, summarize, threshold=14, retain_recent=13, emergency_retain=keep)

    result = c.emergency_compact(session)

    archived = contents(before[: result.archived])
    assert contents(history.get_all(session)) == contents(before[result.archived :])
    assert result.archived == pair_safe_boundary(before, keep)
    assert result.error is None
    if result.archived:
        assert contents(summarize.calls[0][0]) == archived
    else:
        assert summarize.calls == []
