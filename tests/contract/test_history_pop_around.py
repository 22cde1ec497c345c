"""SPEC section 5 (0.2): `pop`, `get_recent(..., pair_safe=False)` and `around`, against
every HistoryStore (SQLite and the in-memory twin), plus what the holes a pop leaves must
not break: counts, compaction, `max_history_len`, `sessions()`, search, purge; and, on
SQLite, a reopen and an export/import round trip."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem.errors import InvalidArgumentError
from sqlmem.protocols import HistoryStore
from sqlmem.records import Message, ToolCall
from sqlmem.sqlite.transfer.export import export_records
from sqlmem.sqlite.transfer.importer import import_records

MakeHistory = Callable[..., HistoryStore]  # the `make_history` fixture (conftest.py)

T0 = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=timezone.utc)


def user(text: str, **kw: Any) -> Message:
    return Message(role="user", content=text, **kw)


def call(call_id: str) -> Message:
    return Message(
        role="assistant", tool_calls=[ToolCall(id=call_id, name="f", arguments='{"a": 1}')]
    )


def result(call_id: str) -> Message:
    return Message(role="tool", content="done", tool_call_id=call_id, name="f")


def seqs(messages: list[Message]) -> list[int | None]:
    return [m.seq for m in messages]


def contents(messages: list[Message]) -> list[str]:
    return [m.content for m in messages]


# -- pop --------------------------------------------------------------------------------------


def test_pop_returns_the_newest_message_whole(history: HistoryStore) -> None:
    history.append("s", user("first"))
    rich = Message(
        role="assistant",
        content="a\x00b 🙂",
        name="bot",
        tool_calls=[ToolCall(id="c1", name="f", arguments="{}")],
        is_error=True,
        metadata={"n": 2**63 - 1, "nested": {"x": [1, None]}},
        created_at=T0,
    )
    history.append("s", rich)
    popped = history.pop("s")
    assert popped is not None
    assert popped.seq == 2 and popped.session_id == "s" and popped.score is None
    expected = rich.model_copy(update={"seq": 2, "session_id": "s"})
    assert popped.model_dump() == expected.model_dump()
    assert contents(history.get_all("s")) == ["first"]
    assert history.count("s") == 1


def test_pop_of_nothing_is_none(history: HistoryStore) -> None:
    assert history.pop("unknown") is None
    history.set_summary("only-summary", "text")
    assert history.pop("only-summary") is None
    history.append("s", user("x"))
    assert history.pop("s") is not None
    assert history.pop("s") is None
    assert history.count("s") == 0 and history.get_all("s", include_archived=True) == []


def test_seqs_are_never_reused_after_a_pop(history: HistoryStore) -> None:
    assert history.append_many("s", [user("1"), user("2"), user("3")]) == [1, 2, 3]
    assert history.pop("s").seq == 3  # type: ignore[union-attr]
    assert history.append("s", user("4")) == 4
    assert history.pop("s").seq == 4  # type: ignore[union-attr]
    assert history.pop("s").seq == 2  # type: ignore[union-attr]
    assert history.pop("s").seq == 1  # type: ignore[union-attr]
    assert history.append_many("s", [user("5"), user("6")]) == [5, 6]
    assert seqs(history.get_all("s")) == [5, 6] and history.count("s") == 2


def test_pop_never_takes_an_archived_message(history: HistoryStore) -> None:
    history.append_many("s", [user(str(i)) for i in range(4)])
    assert history.compact("s", 1) == 3
    assert history.pop("s").content == "3"  # type: ignore[union-attr]
    assert history.pop("s") is None
    assert contents(history.get_all("s", include_archived=True)) == ["0", "1", "2"]
    assert history.sessions() == ["s"]  # archived messages are messages
    assert history.append("s", user("4")) == 5


def test_pop_removes_the_search_entry(history: HistoryStore) -> None:
    history.append("s", user("zebra crossing"))
    history.append("s", user("unicorn sighting"))
    assert contents(history.search("unicorn")) == ["unicorn sighting"]
    history.pop("s")
    assert history.search("unicorn") == []
    assert contents(history.search("zebra")) == ["zebra crossing"]


def test_sessions_lists_a_popped_session_only_while_it_holds_something(
    history: HistoryStore,
) -> None:
    history.append("a", user("x"))
    history.append("b", user("y"))
    history.pop("a")
    assert history.sessions() == ["b"]
    history.set_summary("a", "still here")
    assert history.sessions() == ["a", "b"]


def test_purge_after_pops_starts_again_at_one(history: HistoryStore) -> None:
    history.append_many("s", [user("1"), user("2")])
    history.pop("s")
    history.purge("s")
    assert history.sessions() == [] and history.count("s") == 0
    assert history.append("s", user("new")) == 1


# -- holes: counting, compaction, max_history_len ----------------------------------------------


def _holed(history: HistoryStore) -> None:
    """Session "s" with seqs 1, 2, 4, 6, 7 (3 and 5 popped)."""
    history.append_many("s", [user("1"), user("2"), user("3")])
    history.pop("s")
    history.append("s", user("4"))
    history.append("s", user("5"))
    history.pop("s")
    history.append_many("s", [user("6"), user("7")])


def test_count_and_reads_skip_holes(history: HistoryStore) -> None:
    _holed(history)
    assert seqs(history.get_all("s")) == [1, 2, 4, 6, 7]
    assert history.count("s") == 5
    assert seqs(history.get_recent("s", 3)) == [4, 6, 7]


@pytest.mark.parametrize("keep", [0, 1, 2, 3, 4, 5, 9])
def test_compact_keeps_the_last_messages_not_seqs(history: HistoryStore, keep: int) -> None:
    _holed(history)
    archived = history.compact("s", keep)
    assert archived == max(5 - keep, 0)
    assert history.count("s") == min(keep, 5)
    assert seqs(history.get_all("s")) == [1, 2, 4, 6, 7][5 - min(keep, 5) :]
    assert len(history.get_all("s", include_archived=True)) == 5
    # the counter stays right after the boundary passed holes
    history.append("s", user("8"))
    assert history.count("s") == min(keep, 5) + 1
    assert history.compact("s", 0) == min(keep, 5) + 1 and history.count("s") == 0


def test_compact_with_holes_stays_pair_safe(history: HistoryStore) -> None:
    history.append_many("s", [user("q"), call("c1"), result("c1"), user("junk")])
    history.pop("s")  # seq 4
    history.append_many("s", [result("c1"), user("next")])  # seqs 5, 6
    # keeping 2 would start at the tool result (seq 5): its call (seq 2) stays too
    assert history.compact("s", 2) == 1
    assert seqs(history.get_all("s")) == [2, 3, 5, 6]
    assert history.count("s") == 4


def test_max_history_len_counts_messages_after_pops(make_history: MakeHistory) -> None:
    history = make_history(max_history_len=3)
    history.append_many("s", [user("1"), user("2"), user("3")])
    history.pop("s")
    history.pop("s")
    history.append("s", user("4"))  # seqs 1, 4: nothing to archive
    assert seqs(history.get_all("s")) == [1, 4]
    history.append_many("s", [user("5"), user("6")])  # 1, 4, 5, 6: one too many
    assert seqs(history.get_all("s")) == [4, 5, 6] and history.count("s") == 3
    assert len(history.get_all("s", include_archived=True)) == 4


# -- get_recent(pair_safe=False) ----------------------------------------------------------------


def test_get_recent_without_pair_safety_is_exactly_the_last_n(history: HistoryStore) -> None:
    history.append_many("s", [user("q"), call("c1"), result("c1"), result("c1"), user("ok")])
    assert seqs(history.get_recent("s", 3)) == [5]  # pair-safe: orphaned results left out
    assert seqs(history.get_recent("s", 3, pair_safe=True)) == [5]
    assert seqs(history.get_recent("s", 3, pair_safe=False)) == [3, 4, 5]
    assert seqs(history.get_recent("s", 4, pair_safe=False)) == [2, 3, 4, 5]
    assert seqs(history.get_recent("s", 99, pair_safe=False)) == [1, 2, 3, 4, 5]
    assert history.get_recent("s", 0, pair_safe=False) == []
    assert history.get_recent("unknown", 3, pair_safe=False) == []
    history.compact("s", 2)  # pair-safe: the call (2) stays with its results
    assert seqs(history.get_recent("s", 9, pair_safe=False)) == [2, 3, 4, 5]  # active only
    history.compact("s", 1)
    assert seqs(history.get_recent("s", 9, pair_safe=False)) == [5]


# -- around ---------------------------------------------------------------------------------


def test_around_defaults_to_the_message_and_the_next(history: HistoryStore) -> None:
    history.append_many("s", [user(str(i)) for i in range(1, 6)])
    assert seqs(history.around("s", 3)) == [3, 4]
    assert seqs(history.around("s", 3, before=1, after=1)) == [2, 3, 4]
    assert seqs(history.around("s", 3, before=0, after=0)) == [3]
    assert seqs(history.around("s", 1, before=5, after=10**30)) == [1, 2, 3, 4, 5]
    assert seqs(history.around("s", 5, before=2)) == [3, 4, 5]
    got = history.around("s", 2)
    assert contents(got) == ["2", "3"] and {m.session_id for m in got} == {"s"}


def test_around_includes_archived_messages(history: HistoryStore) -> None:
    history.append_many("s", [user(str(i)) for i in range(1, 6)])
    history.compact("s", 1)
    assert seqs(history.around("s", 2, before=1, after=2)) == [1, 2, 3, 4]
    assert seqs(history.around("s", 4, after=5)) == [4, 5]


def test_around_unknown_is_empty(history: HistoryStore) -> None:
    assert history.around("nope", 1) == []
    history.append_many("s", [user("1"), user("2"), user("3")])
    history.pop("s")
    for seq in (0, -1, 3, 4, 2**63 - 1, 2**63, 10**30):
        assert history.around("s", seq, before=5, after=5) == [], seq


def test_around_skips_holes(history: HistoryStore) -> None:
    _holed(history)  # 1, 2, 4, 6, 7
    assert seqs(history.around("s", 4, before=1, after=1)) == [2, 4, 6]
    assert seqs(history.around("s", 2, after=2)) == [2, 4, 6]
    assert history.around("s", 5, before=3, after=3) == []


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"seq": 1, "before": -1}, "before"),
        ({"seq": 1, "after": -2}, "after"),
        ({"seq": True}, "seq"),
        ({"seq": "1"}, "seq"),
        ({"seq": 1.0}, "seq"),
        ({"seq": 1, "before": 1.5}, "before"),
        ({"seq": 1, "after": False}, "after"),
    ],
)
def test_around_bad_arguments(history: HistoryStore, kwargs: dict[str, Any], named: str) -> None:
    history.append("s", user("x"))
    with pytest.raises(InvalidArgumentError, match=named):
        history.around("s", **kwargs)
    with pytest.raises(InvalidArgumentError, match="session_id"):
        history.around("", 1)


# -- SQLite only: a reopen, an export and import ------------------------------------------------


def test_seq_not_reused_after_reopen(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with sqlmem.open(path) as db:
        db.history.append_many("s", [user("1"), user("2")])
        assert db.history.pop("s").seq == 2  # type: ignore[union-attr]
    with sqlmem.open(path) as db:
        assert db.history.count("s") == 1
        assert db.history.append("s", user("3")) == 3
        assert db.history.pop("s").seq == 3  # type: ignore[union-attr]
        assert db.history.pop("s").seq == 1  # type: ignore[union-attr]
    with sqlmem.open(path) as db:
        assert db.history.append("s", user("4")) == 4
        assert seqs(db.history.get_all("s")) == [4]


def test_export_and_import_keep_counts_with_holes(tmp_path: Path) -> None:
    with sqlmem.open(tmp_path / "a.db") as db:
        _holed(db.history)
        db.history.compact("s", 3)  # archived 1, 2; active 4, 6, 7
        records = list(export_records(db))
    with sqlmem.open(tmp_path / "b.db") as db:
        import_records(db, records)
        import_records(db, records)  # idempotent
        assert db.history.count("s") == 3
        assert seqs(db.history.get_all("s")) == [4, 6, 7]
        assert seqs(db.history.get_all("s", include_archived=True)) == [1, 2, 4, 6, 7]
        assert db.history.compact("s", 1) == 2 and db.history.count("s") == 1
        assert db.history.append("s", user("8")) == 8
        assert db.history.count("s") == 2


def test_concurrent_pops_take_each_message_once(history: HistoryStore) -> None:
    """8 threads popping while 2 append: every message is popped at most once, none is
    lost, and no seq is handed out twice."""
    history.append_many("s", [user(f"m{i}") for i in range(200)])
    popped: list[int] = []
    appended: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(10)

    def popper() -> None:
        start.wait()
        for _ in range(40):
            got = history.pop("s")
            if got is not None:
                with lock:
                    popped.append(got.seq or 0)

    def appender() -> None:
        start.wait()
        for i in range(50):
            seq = history.append("s", user(f"new{i}"))
            with lock:
                appended.append(seq)

    threads = [threading.Thread(target=popper) for _ in range(8)]
    threads += [threading.Thread(target=appender) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(popped) == len(set(popped))  # never the same message twice
    assert len(appended) == len(set(appended)) == 100
    assert set(appended).isdisjoint(range(1, 201))  # seqs are never reused
    left = seqs(history.get_all("s"))
    assert set(left).isdisjoint(popped)
    assert sorted(left + popped) == sorted([*range(1, 201), *appended])
    assert history.count("s") == len(left) == 300 - len(popped)


@pytest.mark.parametrize("session_id", [None, "", "x" * 513, 3, "bad \ud800"])
def test_pop_and_around_refuse_bad_session_ids(history: HistoryStore, session_id: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="session_id"):
        history.pop(session_id)
    with pytest.raises(InvalidArgumentError, match="session_id"):
        history.around(session_id, 1)
    with pytest.raises(InvalidArgumentError, match="session_id"):
        history.get_recent(session_id, 1, pair_safe=False)
