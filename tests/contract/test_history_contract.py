"""SPEC section 5, run against every HistoryStore (SQLite and the in-memory twin)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from sqlmem.errors import InvalidArgumentError
from sqlmem.protocols import HistoryStore
from sqlmem.records import Message, ToolCall

MakeHistory = Callable[..., HistoryStore]  # the `make_history` fixture (conftest.py)

T0 = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=timezone.utc)


def user(text: str, **kw: Any) -> Message:
    return Message(role="user", content=text, **kw)


def call(call_id: str, text: str = "") -> Message:
    return Message(
        role="assistant",
        content=text,
        tool_calls=[ToolCall(id=call_id, name="lookup", arguments='{"q": 1}')],
    )


def result(call_id: str, text: str = "done") -> Message:
    return Message(role="tool", content=text, tool_call_id=call_id, name="lookup")


def contents(messages: list[Message]) -> list[str]:
    return [m.content for m in messages]


def seqs(messages: list[Message]) -> list[int | None]:
    return [m.seq for m in messages]


def stripped(message: Message) -> Message:
    """The message as written: output-only fields cleared."""
    return message.model_copy(update={"seq": None, "session_id": None, "score": None})


# -- protocol, append, seqs --------------------------------------------------------------


def test_implements_protocol(history: HistoryStore) -> None:
    assert isinstance(history, HistoryStore)


def test_append_returns_increasing_seqs_per_session(history: HistoryStore) -> None:
    assert [history.append("a", user(str(i))) for i in range(3)] == [1, 2, 3]
    assert history.append("b", user("x")) == 1
    assert history.append("a", user("y")) == 4


def test_append_many_returns_consecutive_seqs(history: HistoryStore) -> None:
    history.append("s", user("first"))
    assert history.append_many("s", [user("a"), user("b"), user("c")]) == [2, 3, 4]
    assert history.append_many("s", []) == []
    assert history.append_many("s", (user(str(i)) for i in range(2))) == [5, 6]
    assert contents(history.get_all("s")) == ["first", "a", "b", "c", "0", "1"]


def test_append_many_large_batch_keeps_order(history: HistoryStore) -> None:
    batch = [user(f"m{i}") for i in range(300)]
    assert history.append_many("s", batch) == list(range(1, 301))
    assert contents(history.get_all("s")) == [f"m{i}" for i in range(300)]


def test_plain_and_rich_messages_round_trip_alone_and_mixed(history: HistoryStore) -> None:
    """Plain text messages are stored with fewer bound columns than rich ones (sqlite):
    every field must come back equal whichever way a batch is made up."""
    rich = [
        call("c1", "let me look"),
        result("c1", "found it"),
        Message(role="assistant", content="oops", is_error=True),
        Message(role="user", content="tagged", metadata={"k": [1, {"n": None}]}),
        Message(role="user", content="named", name="alice", created_at=T0),
    ]
    plain = [user("hello"), Message(role="assistant", content="", created_at=T0)]
    history.append_many("plain", plain)
    history.append_many("rich", rich)
    history.append_many("mixed", plain + rich + plain)
    for message in plain + rich:
        history.append("one", message)
    for session, sent in [("plain", plain), ("rich", rich), ("mixed", plain + rich + plain),
                          ("one", plain + rich)]:  # fmt: skip
        got = history.get_all(session)
        assert [stripped(m).model_copy(update={"created_at": None}) for m in got] == [
            m.model_copy(update={"created_at": None}) for m in sent
        ]
        for m, s in zip(got, sent, strict=True):
            if s.created_at is not None:
                assert m.created_at == s.created_at


def test_append_many_is_all_or_nothing(history: HistoryStore) -> None:
    history.append("s", user("kept"))
    with pytest.raises(InvalidArgumentError):
        history.append_many("s", [user("a"), "not a message", user("b")])  # type: ignore[list-item]
    bad = Message.model_construct(role="user", content="lone \ud800 surrogate")
    with pytest.raises(InvalidArgumentError):
        history.append_many("s", [user("c")] * 150 + [bad])
    assert contents(history.get_all("s")) == ["kept"]
    assert history.append("s", user("next")) == 2  # no seq was used up


def test_append_refuses_unstorable_message(history: HistoryStore) -> None:
    bad = Message.model_construct(role="user", content="\udfff", tool_calls=[], metadata={})
    with pytest.raises(InvalidArgumentError):
        history.append("s", bad)
    mutated = user("x")
    mutated.metadata = {"f": {1, 2}}  # not JSON
    with pytest.raises(InvalidArgumentError):
        history.append("s", mutated)
    assert history.count("s") == 0
    assert history.sessions() == []


def test_append_does_not_change_the_input(history: HistoryStore) -> None:
    message = user("hi")
    history.append("s", message)
    assert message.seq is None and message.session_id is None and message.created_at is None


# -- round trip ----------------------------------------------------------------------------


ROUND_TRIP = [
    Message(role="system", content=""),
    Message(role="user", content="line 1\nline 2\r\n\ttab \x00 nul \U0001f600 𝔘 \U0010fffd ä"),
    Message(
        role="assistant",
        content="calling",
        name="bot\x00name",
        tool_calls=[
            ToolCall(id="c1", name="search", arguments='{"q": "x\\u0000y", "n": 3}'),
            ToolCall(id="c2", name="noop", arguments=""),
        ],
        metadata={
            "int64": 2**63 - 1,
            "neg": -(2**63),
            "big": 2**70,
            "float": 0.1,
            "nested": {"list": [1, "two", None, True, {"deep": ["\x00", "😀"]}]},
            "": "empty key",
            "a.b": 1,
        },
        created_at=T0,
    ),
    Message(role="tool", content="result \x00", tool_call_id="c1", name="search", is_error=True),
]


def test_round_trip_every_field(history: HistoryStore) -> None:
    history.append_many("s", ROUND_TRIP)
    out = history.get_all("s")
    assert [m.seq for m in out] == [1, 2, 3, 4]
    assert all(m.session_id == "s" and m.score is None for m in out)
    for written, read in zip(ROUND_TRIP, out, strict=True):
        expected = (
            written
            if written.created_at
            else written.model_copy(update={"created_at": read.created_at})
        )
        assert stripped(read) == expected
    assert out[2].created_at == T0
    assert out[2].metadata["int64"] == 2**63 - 1
    assert isinstance(out[2].tool_calls[0], ToolCall)


def test_created_at_defaults_to_now_in_utc_ms(history: HistoryStore) -> None:
    before = datetime.now(timezone.utc) - timedelta(milliseconds=1)
    history.append("s", user("now"))
    after = datetime.now(timezone.utc) + timedelta(milliseconds=1)
    (read,) = history.get_all("s")
    assert read.created_at is not None
    assert read.created_at.tzinfo is not None and read.created_at.utcoffset() == timedelta(0)
    assert before <= read.created_at <= after
    assert read.created_at.microsecond % 1000 == 0


def test_naive_and_offset_datetimes_come_back_as_utc(history: HistoryStore) -> None:
    naive = datetime(2020, 1, 1, 12, 0, 0, 999999)
    plus2 = datetime(2020, 1, 1, 14, 0, 0, tzinfo=timezone(timedelta(hours=2)))
    history.append_many("s", [user("a", created_at=naive), user("b", created_at=plus2)])
    a, b = history.get_all("s")
    assert a.created_at == datetime(2020, 1, 1, 12, 0, 0, 999000, tzinfo=timezone.utc)
    assert b.created_at == datetime(2020, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
    assert b.created_at is not None and b.created_at.tzinfo == timezone.utc


def test_returned_messages_are_copies(history: HistoryStore) -> None:
    history.append("s", user("x", metadata={"k": [1]}))
    first = history.get_all("s")[0]
    first.metadata["k"].append(2)
    first.content = "changed"
    again = history.get_all("s")[0]
    assert again.content == "x" and again.metadata == {"k": [1]}


# -- get_recent, get_all, count -----------------------------------------------------------


def test_get_recent_window(history: HistoryStore) -> None:
    history.append_many("s", [user(str(i)) for i in range(10)])
    assert contents(history.get_recent("s", 3)) == ["7", "8", "9"]
    assert seqs(history.get_recent("s", 1)) == [10]
    assert contents(history.get_recent("s", 100)) == [str(i) for i in range(10)]
    assert history.get_recent("s", 0) == []
    assert history.get_recent("s", -5) == []
    assert history.get_recent("unknown", 5) == []


def test_get_recent_is_pair_safe(history: HistoryStore) -> None:
    history.append_many(
        "s", [user("q"), call("c1"), result("c1", "r1"), result("c1", "r2"), user("thanks")]
    )
    assert contents(history.get_recent("s", 2)) == ["thanks"]  # r2 alone would be orphaned
    assert contents(history.get_recent("s", 3)) == ["thanks"]
    assert contents(history.get_recent("s", 4)) == ["", "r1", "r2", "thanks"]
    history.append("s", result("c9", "orphan"))
    assert contents(history.get_recent("s", 1)) == []


def test_get_all_and_count(history: HistoryStore) -> None:
    assert history.get_all("s") == [] and history.count("s") == 0
    history.append_many("s", [user("a"), user("b")])
    history.append("other", user("z"))
    assert contents(history.get_all("s")) == ["a", "b"]
    assert history.count("s") == 2 and history.count("other") == 1


# -- summaries and sessions -----------------------------------------------------------------


def test_summary_last_write_wins(history: HistoryStore) -> None:
    assert history.get_summary("s") == ""
    history.set_summary("s", "one")
    history.set_summary("s", "two \x00 ✓")
    assert history.get_summary("s") == "two \x00 ✓"
    assert history.count("s") == 0
    with pytest.raises(InvalidArgumentError):
        history.set_summary("s", 3)  # type: ignore[arg-type]


def test_sessions_lists_sessions_with_messages_or_summary(history: HistoryStore) -> None:
    assert history.sessions() == []
    history.append("b", user("x"))
    history.set_summary("a", "summary only")
    history.set_summary("c", "")
    history.compact("d", 0)
    assert history.sessions() == ["a", "b"]
    history.compact("b", 0)  # archived messages still belong to the session
    assert history.sessions() == ["a", "b"]


# -- compact ---------------------------------------------------------------------------------


def test_compact_archives_all_but_keep_last(history: HistoryStore) -> None:
    history.append_many("s", [user(str(i)) for i in range(10)])
    assert history.compact("s", 4, summary="the first six") == 6
    assert history.get_summary("s") == "the first six"
    assert history.count("s") == 4
    assert contents(history.get_all("s")) == ["6", "7", "8", "9"]
    assert contents(history.get_recent("s", 10)) == ["6", "7", "8", "9"]
    everything = history.get_all("s", include_archived=True)
    assert seqs(everything) == list(range(1, 11))
    assert history.compact("s", 4) == 0  # idempotent
    assert history.get_summary("s") == "the first six"  # no summary given: kept
    assert history.append("s", user("10")) == 11  # seqs go on


def test_compact_edges(history: HistoryStore) -> None:
    assert history.compact("none", 3) == 0
    assert history.sessions() == []
    assert history.compact("none", 3, summary="from elsewhere") == 0
    assert history.get_summary("none") == "from elsewhere"
    history.append_many("s", [user("a"), user("b")])
    assert history.compact("s", 5) == 0
    assert history.compact("s", 2) == 0
    assert history.compact("s", 0) == 2
    assert history.count("s") == 0 and history.get_recent("s", 5) == []
    assert len(history.get_all("s", include_archived=True)) == 2
    with pytest.raises(InvalidArgumentError, match="keep_last"):
        history.compact("s", -1)
    with pytest.raises(InvalidArgumentError, match="keep_last"):
        history.compact("s", 1.5)  # type: ignore[arg-type]


def test_compact_keeps_tool_call_with_its_results(history: HistoryStore) -> None:
    history.append_many(
        "s",
        [user("q1"), user("q2"), call("c1", "calling"), result("c1", "r1"), result("c1", "r2")],
    )
    # keep_last=1 would keep only r2; the call (seq 3) and r1 must stay with it.
    assert history.compact("s", 1) == 2
    assert contents(history.get_all("s")) == ["calling", "r1", "r2"]
    assert contents(history.get_recent("s", 3)) == ["calling", "r1", "r2"]


def test_compact_moves_back_to_the_call(history: HistoryStore) -> None:
    history.append_many("s", [call("c1"), result("c1", "r1"), result("c1", "r2"), user("u")])
    assert history.compact("s", 2) == 0  # r2 needs r1 and the call: nothing can go
    assert history.count("s") == 4
    assert history.compact("s", 1) == 3


def test_compact_splits_nothing_when_the_call_is_already_archived(history: HistoryStore) -> None:
    history.append_many("s", [result("c0", "o1"), result("c0", "o2"), user("u")])
    # Orphaned results (their call is not stored): no pair to keep, the boundary stays.
    assert history.compact("s", 2) == 1
    assert contents(history.get_all("s")) == ["o2", "u"]


def test_compact_boundary_only_moves_forward(history: HistoryStore) -> None:
    history.append_many("s", [user(str(i)) for i in range(6)])
    assert history.compact("s", 2) == 4
    assert history.compact("s", 5) == 0
    assert history.count("s") == 2


# -- purge ------------------------------------------------------------------------------------


def test_purge_removes_everything_of_the_session(history: HistoryStore) -> None:
    history.append_many("s", [user("secret alpha"), user("secret beta")])
    history.compact("s", 1, summary="secret summary")
    history.append("keep", user("secret gamma"))
    history.purge("s")
    assert history.get_all("s", include_archived=True) == []
    assert history.count("s") == 0 and history.get_summary("s") == ""
    assert history.sessions() == ["keep"]
    assert [m.session_id for m in history.search("secret")] == ["keep"]
    assert history.append("s", user("again")) == 1  # a new session starts over
    history.purge("never-existed")


# -- search ------------------------------------------------------------------------------------


def test_search_finds_words_best_first(history: HistoryStore) -> None:
    history.append_many(
        "s",
        [
            user("the weather is nice"),
            user("my dog Rex loves running"),
            user("the dog ate the homework"),
            user("nothing here"),
        ],
    )
    history.append("t", user("Rex the dog runs fast"))
    hits = history.search("dog rex")
    assert {(m.session_id, m.seq) for m in hits} == {("s", 2), ("s", 3), ("t", 1)}
    assert hits[-1].content == "the dog ate the homework"  # one word only
    assert all(m.score is not None and m.score > 0 for m in hits)
    scores = [m.score for m in hits]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert [m.seq for m in history.search("run")] in ([1, 2], [2, 1])  # stemming
    assert {m.session_id for m in history.search("run")} == {"s", "t"}


def test_search_session_filter_and_top_k(history: HistoryStore) -> None:
    for i in range(5):
        history.append("a", user(f"apple {i}"))
        history.append("b", user(f"apple pie {i}"))
    only_a = history.search("apple", session_id="a", top_k=10)
    assert len(only_a) == 5 and {m.session_id for m in only_a} == {"a"}
    assert len(history.search("apple", top_k=3)) == 3
    assert len(history.search("apple", top_k=100)) == 10
    assert history.search("apple", top_k=0) == []
    assert history.search("apple", top_k=-1) == []
    assert history.search("apple", session_id="unknown") == []


def test_search_includes_archived_messages(history: HistoryStore) -> None:
    history.append_many("s", [user("archived zebra"), user("active lion")])
    history.compact("s", 1)
    assert contents(history.search("zebra")) == ["archived zebra"]


@pytest.mark.parametrize(
    "query",
    [
        '"',
        "'",
        "what's",
        "C++",
        "a:b",
        "AND",
        "OR NOT",
        "NEAR(a b)",
        "*",
        "^start",
        "col:value",
        "😀🎉",
        "lone \ud800 surrogate",
        "x" * 10_000,
        "word " * 2000,
        "\x00",
        "",
        "   ",
        "-minus +plus",
        "(unbalanced",
    ],
)
def test_search_any_text_is_a_valid_query(history: HistoryStore, query: str) -> None:
    history.append("s", user("AND or NOT near word start value minus plus b a unbalanced"))
    hits = history.search(query)
    assert isinstance(hits, list)


def test_search_without_words_returns_nothing(history: HistoryStore) -> None:
    history.append("s", user("anything"))
    assert history.search("!!! ??? ...") == []
    assert history.search("") == []


def test_search_cjk_runs_and_latin_inside_cjk(history: HistoryStore) -> None:
    history.append_many(
        "s", [user("用户喜欢周日早上跑步"), user("我喜欢Python编程"), user("日本語のテキスト")]
    )
    assert contents(history.search("跑步")) == ["用户喜欢周日早上跑步"]
    assert set(contents(history.search("喜欢"))) == {"用户喜欢周日早上跑步", "我喜欢Python编程"}
    assert contents(history.search("python")) == ["我喜欢Python编程"]
    assert contents(history.search("テキスト")) == ["日本語のテキスト"]
    assert history.search("跑周") == []  # not a consecutive run


def test_search_result_fields(history: HistoryStore) -> None:
    history.append("s", call("c1", "calling the weather tool"))
    (hit,) = history.search("weather")
    assert hit.session_id == "s" and hit.seq == 1 and hit.role == "assistant"
    assert hit.tool_calls[0].id == "c1"


def test_search_off_raises_but_storage_works(make_history: MakeHistory) -> None:
    history = make_history(history_search=False)
    assert history.append("s", user("hello world")) == 1
    assert contents(history.get_all("s")) == ["hello world"]
    with pytest.raises(InvalidArgumentError, match="history_search"):
        history.search("hello")


# -- max_history_len ----------------------------------------------------------------------------


def test_max_history_len_archives_older_messages(make_history: MakeHistory) -> None:
    history = make_history(max_history_len=3)
    for i in range(5):
        history.append("s", user(str(i)))
    assert contents(history.get_all("s")) == ["2", "3", "4"]
    history.append_many("s", [user(str(i)) for i in range(5, 10)])
    assert contents(history.get_all("s")) == ["7", "8", "9"]
    assert history.count("s") == 3
    assert len(history.get_all("s", include_archived=True)) == 10
    assert history.append("other", user("x")) == 1 and history.count("other") == 1


def test_max_history_len_is_pair_safe(make_history: MakeHistory) -> None:
    history = make_history(max_history_len=2)
    history.append_many("s", [user("q"), call("c1", "call"), result("c1", "r1")])
    assert contents(history.get_all("s")) == ["call", "r1"]
    history.append("s", result("c1", "r2"))
    assert contents(history.get_all("s")) == ["call", "r1", "r2"]  # over the limit, kept whole
    history.append("s", user("next"))  # r2 would be first: the call and r1 stay too
    assert contents(history.get_all("s")) == ["call", "r1", "r2", "next"]
    history.append("s", user("last"))
    assert contents(history.get_all("s")) == ["next", "last"]


# -- argument checks ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["", "x" * 513, None, 5, b"bytes", "bad \ud800"])
def test_bad_session_ids_are_refused(history: HistoryStore, bad: Any) -> None:
    calls: list[Callable[[], object]] = [
        lambda: history.append(bad, user("x")),
        lambda: history.append_many(bad, [user("x")]),
        lambda: history.get_recent(bad, 1),
        lambda: history.get_all(bad),
        lambda: history.count(bad),
        lambda: history.set_summary(bad, "x"),
        lambda: history.get_summary(bad),
        lambda: history.compact(bad, 1),
        lambda: history.purge(bad),
        lambda: history.search("x", session_id=bad) if bad is not None else None,
    ]
    for make_call in calls:
        if bad is None and make_call is calls[-1]:
            continue
        with pytest.raises(InvalidArgumentError, match="session_id"):
            make_call()
    assert history.sessions() == []


def test_longest_session_id_is_fine(history: HistoryStore) -> None:
    sid = "telegram:12345:" + "x" * (512 - 15)
    assert history.append(sid, user("x")) == 1
    assert history.sessions() == [sid]


def test_other_bad_arguments(history: HistoryStore) -> None:
    with pytest.raises(InvalidArgumentError, match="message"):
        history.append("s", {"role": "user", "content": "x"})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="messages"):
        history.append_many("s", user("x"))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="n must be an int"):
        history.get_recent("s", "3")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="n must be an int"):
        history.get_recent("s", True)
    with pytest.raises(InvalidArgumentError, match="top_k"):
        history.search("x", top_k=2.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="query"):
        history.search(None)  # type: ignore[arg-type]
    assert history.get_recent("s", 10**30) == []
    history.append("s", user("x"))
    assert len(history.get_recent("s", 10**30)) == 1
    assert len(history.search("x", top_k=10**30)) == 1
    assert history.compact("s", 10**30) == 0
    assert history.compact("s", 10**30, summary="s") == 0 and history.get_summary("s") == "s"


def test_lone_surrogates_are_dropped_from_queries(history: HistoryStore) -> None:
    history.append("s", user("lone wolf"))
    assert contents(history.search("lone\ud800")) == ["lone wolf"]
    with pytest.raises(InvalidArgumentError, match="surrogate"):
        history.set_summary("s", "bad \udc00")
    with pytest.raises(InvalidArgumentError, match="surrogate"):
        history.compact("s", 0, summary="bad \udc00")
    assert history.count("s") == 1
