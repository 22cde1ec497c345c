"""What an inspector reads of a history, on every history store, awaited too:
`history.sessions(after=, limit=)`, the sorted list of sessions a page at a time (the
same list `sessions()` gives whole), and `history.archived_seq(session_id)`, the archive
boundary read without reading a message."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from targets import BACKENDS, Target, backend_target

import sqlmem
import sqlmem.aio
from sqlmem import InvalidArgumentError, Message, ToolCall
from sqlmem.protocols import HistoryStore, has_archive_boundary

#: Ids whose order is tricky: case, digits, NUL inside (stored escaped on PostgreSQL), the
#: escape marker U+E000 first, characters past it, astral ones, a prefix of another.
IDS = [
    "b", "a", "B", "a\x00z", "a\x00", "ab", "\ue000x", "\ue001", "\uffff", "😀", "é",
    "telegram:1:", "telegram:10:", "telegram:2:", "z" * 512,
]  # fmt: skip


def filled(history: HistoryStore) -> list[str]:
    for n, session in enumerate(IDS):
        if n % 3 == 2:
            history.set_summary(session, "only a summary")
        else:
            history.append(session, Message(role="user", content=f"hello {n}"))
    history.append("gone", Message(role="user", content="purged"))
    history.purge("gone")  # not listed
    history.set_summary("blank", "")  # not listed
    return sorted(IDS)


def pages(history: HistoryStore, limit: int) -> list[list[str]]:
    found: list[list[str]] = []
    after: str | None = None
    while True:
        page = history.sessions(after=after, limit=limit)
        assert len(page) <= limit
        if not page:
            return found
        found.append(page)
        after = page[-1]


def test_paging_gives_the_whole_sorted_list(history: HistoryStore) -> None:
    everything = filled(history)
    assert history.sessions() == everything
    for limit in (1, 2, 7, 100):
        got = pages(history, limit)
        assert [s for page in got for s in page] == everything
        assert all(len(page) == limit for page in got[:-1])


def test_after_and_limit_alone(history: HistoryStore) -> None:
    everything = filled(history)
    assert history.sessions(limit=3) == everything[:3]
    assert history.sessions(after="a") == [s for s in everything if s > "a"]
    assert history.sessions(after="a\x00") == [s for s in everything if s > "a\x00"]
    assert history.sessions(after="\ue000") == [s for s in everything if s > "\ue000"]
    assert history.sessions(after="never stored") == [s for s in everything if s > "never stored"]
    assert history.sessions(after=everything[-1]) == []
    assert history.sessions(limit=0) == [] and history.sessions(limit=-5) == []


@pytest.mark.parametrize(
    ("after", "limit"), [("", None), (3, None), (None, "2"), (None, True), ("\ud800", 1)]
)
def test_bad_paging_arguments_are_refused(
    history: HistoryStore, after: object, limit: object
) -> None:
    with pytest.raises(InvalidArgumentError):
        history.sessions(after=after, limit=limit)  # type: ignore[arg-type]


@settings(max_examples=25, deadline=None)
@given(
    ids=st.sets(st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=4),
                max_size=8),
    limit=st.integers(1, 4),
)  # fmt: skip
def test_any_ids_page_in_code_point_order(ids: set[str], limit: int) -> None:
    history = sqlmem.open(":memory:").history  # the rule itself, on the twin
    for session in ids:
        history.append(session, Message(role="user", content="x"))
    assert [s for page in pages(history, limit) for s in page] == sorted(ids)


def check_boundary(history: HistoryStore, session: str) -> int:
    """The boundary splits the stored messages exactly into archived and active ones."""
    assert has_archive_boundary(history)
    boundary = history.archived_seq(session)
    active = {m.seq for m in history.get_all(session)}
    stored = [m.seq for m in history.get_all(session, include_archived=True)]
    assert all((seq is not None and seq <= boundary) == (seq not in active) for seq in stored)
    assert history.count(session) == len(active)
    return boundary


def say(history: HistoryStore, session: str, n: int) -> None:
    history.append_many(session, [Message(role="user", content=f"m{i}") for i in range(n)])


def test_archived_seq_is_the_archive_boundary(history: HistoryStore) -> None:
    assert history.archived_seq("nobody") == 0
    say(history, "s", 5)
    assert check_boundary(history, "s") == 0
    assert history.compact("s", keep_last=2) == 3
    assert check_boundary(history, "s") == 3
    history.pop("s")  # the newest active message goes; its seq is never reused
    say(history, "s", 2)
    assert check_boundary(history, "s") == 3
    history.compact("s", keep_last=0, summary="all of it")
    assert check_boundary(history, "s") == 7 and history.count("s") == 0
    history.purge("s")
    assert history.archived_seq("s") == 0
    say(history, "s", 1)  # the same id starts again
    assert check_boundary(history, "s") == 0


def test_archived_seq_keeps_a_tool_call_with_its_result(history: HistoryStore) -> None:
    call = Message(role="assistant", tool_calls=[ToolCall(id="c1", name="lookup", arguments="{}")])
    result = Message(role="tool", tool_call_id="c1", content="found")
    history.append_many("t", [Message(role="user", content="q"), call, result])
    history.compact("t", keep_last=1)  # pair-safe: the call and its result stay together
    boundary = check_boundary(history, "t")
    assert boundary == 1 and [m.seq for m in history.get_all("t")] == [2, 3]


def test_archived_seq_needs_a_session_id(history: HistoryStore) -> None:
    with pytest.raises(InvalidArgumentError):
        history.archived_seq("")


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    return backend_target(request, tmp_path)


def test_inspection_reads_awaited_on_every_backend(target: Target) -> None:
    async def main() -> None:
        adb = await sqlmem.aio.open(target.target, agent_id=target.agent_id)
        async with adb:
            for session in ("s3", "s1", "s2"):
                await adb.history.append(session, Message(role="user", content="hi"))
            assert await adb.history.sessions(limit=2) == ["s1", "s2"]
            assert await adb.history.sessions(after="s2", limit=2) == ["s3"]
            assert await adb.history.sessions() == ["s1", "s2", "s3"]
            await adb.history.compact("s1", keep_last=0)
            assert await adb.history.archived_seq("s1") == 1
            assert await adb.history.archived_seq("s2") == 0

    asyncio.run(main())


class ThirdPartyHistory:
    """A history store written against the protocol alone: every member but the
    archive boundary, which is a capability, not part of `HistoryStore`."""

    def __init__(self, inner: HistoryStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        if name == "archived_seq":
            raise AttributeError(name)
        return getattr(self._inner, name)


for _member in ("append", "append_many", "get_recent", "pop", "around", "get_all", "count",
                "set_summary", "get_summary", "compact", "purge", "sessions", "search",
                "embed_pending", "max_history_len"):  # fmt: skip
    setattr(ThirdPartyHistory, _member, property(lambda self, m=_member: getattr(self._inner, m)))


def test_a_store_without_the_boundary_is_still_a_history_store(history: HistoryStore) -> None:
    from sqlmem.ui.queries import _archived_seq  # the inspector's reading of the boundary

    bare = ThirdPartyHistory(history)
    assert isinstance(bare, HistoryStore) and not has_archive_boundary(bare)

    def splits(boundary: int) -> bool:  # every stored message at or before it is archived
        active = {m.seq for m in history.get_all("s")}
        stored = [m.seq for m in history.get_all("s", include_archived=True)]
        return all((seq is not None and seq <= boundary) == (seq not in active) for seq in stored)

    assert _archived_seq(bare, "s") == 0  # type: ignore[arg-type]
    say(history, "s", 5)
    history.compact("s", keep_last=2)
    history.pop("s")
    assert splits(_archived_seq(bare, "s")) and _archived_seq(bare, "s") == 3  # type: ignore[arg-type]
    history.compact("s", keep_last=0, summary="all")
    assert splits(_archived_seq(bare, "s"))  # type: ignore[arg-type]
