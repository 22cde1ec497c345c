"""`SqlmemSession` under the SDK's `OpenAIResponsesCompactionSession` (openai-agents 0.24).

Regression: the SDK compacts a run's exchange automatically only through a session's
`_get_compaction_snapshot` hook (atomic suffix replacement); without it, compaction over
`SqlmemSession` was always skipped ("complete stored history could not be matched").
Also the `wrapper=` run context the SDK passes to sessions accepting it (0.20+).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from types import SimpleNamespace
from typing import Any, TypeVar
from unittest.mock import AsyncMock, MagicMock

import pytest

agents = pytest.importorskip("agents")

from agents import Agent, Runner, set_tracing_disabled  # noqa: E402
from agents.memory import OpenAIResponsesCompactionSession  # noqa: E402
from agents.memory.session import _session_accepts_wrapper  # noqa: E402
from agents.testing import ScriptedModel, assistant_message  # noqa: E402

import sqlmem  # noqa: E402
from sqlmem.adapters.openai_agents import SqlmemSession  # noqa: E402

T = TypeVar("T")

SUMMARY = {"type": "compaction", "id": "cmp-1", "encrypted_content": "summary-bytes"}


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


@pytest.fixture
def session(db: sqlmem.MemoryDB) -> Any:
    s = SqlmemSession("chat", db)
    yield s
    s.close()


def test_runner_compacts_the_latest_exchange_of_a_limited_session(db: sqlmem.MemoryDB) -> None:
    """A session whose reads are limited shows the model only its latest items: the SDK
    then compacts just that exchange (the suffix) and keeps what the model did not see."""
    set_tracing_disabled(True)
    session = SqlmemSession("chat", db, limit=1)
    client = MagicMock()
    client.responses.compact = AsyncMock(return_value=SimpleNamespace(output=[SUMMARY]))
    compacting = OpenAIResponsesCompactionSession(
        "chat",
        session,
        client=client,
        compaction_mode="input",
        should_trigger_compaction=lambda _: True,
    )
    model = ScriptedModel()
    agent = Agent(name="worker", model=model)

    async def main() -> None:
        await compacting.add_items([_user("unseen"), _user("visible tail")])
        model.enqueue([assistant_message("answer")])
        await Runner.run(agent, "question", session=compacting)

    run(main())
    assert "unseen" not in str(model.calls[0].input)
    client.responses.compact.assert_awaited_once()
    sent = client.responses.compact.call_args.kwargs["input"]
    assert "unseen" not in str(sent) and "question" in str(sent)
    assert run(session.get_items(limit=100)) == [_user("unseen"), SUMMARY]
    session.close()


def test_snapshot_replaces_exactly_its_suffix(session: SqlmemSession) -> None:
    run(session.add_items([_user(str(i)) for i in range(5)]))
    snapshot = run(session._get_compaction_snapshot(3))
    assert snapshot is not None
    assert snapshot.items == [_user("2"), _user("3"), _user("4")]
    assert snapshot.complete is False  # older items exist
    assert run(snapshot.replace_suffix(1, [SUMMARY])) is True
    assert run(session.get_items()) == [_user("0"), _user("1"), _user("2"), SUMMARY]
    whole = run(session._get_compaction_snapshot(10))
    assert whole is not None and whole.complete is True and len(whole.items) == 4
    assert run(whole.replace_suffix(4, [SUMMARY])) is False  # nothing to replace


def test_a_write_after_the_snapshot_makes_it_refuse(
    session: SqlmemSession, db: sqlmem.MemoryDB
) -> None:
    """A newer append (here by other code through the same file) or a pop invalidates
    the snapshot: nothing is replaced and nothing lost."""
    run(session.add_items([_user("a"), _user("b")]))
    snapshot = run(session._get_compaction_snapshot(5))
    assert snapshot is not None
    run(session.add_items([_user("newer")]))
    assert run(snapshot.replace_suffix(0, [SUMMARY])) is False
    assert run(session.get_items()) == [_user("a"), _user("b"), _user("newer")]
    popped = run(session._get_compaction_snapshot(5))
    assert popped is not None
    run(session.pop_item())
    run(session.add_items([_user("newer")]))  # same item again, at a new seq
    assert run(popped.replace_suffix(0, [SUMMARY])) is False
    assert len(db.history.get_all("chat")) == 3


def test_a_refused_output_changes_nothing(session: SqlmemSession) -> None:
    run(session.add_items([_user("a"), _user("b")]))
    snapshot = run(session._get_compaction_snapshot(5))
    assert snapshot is not None
    with pytest.raises(sqlmem.InvalidArgumentError, match=r"output\[1\]"):
        run(snapshot.replace_suffix(0, [SUMMARY, {"bad": float("nan")}]))
    assert run(session.get_items()) == [_user("a"), _user("b")]


def test_an_expired_prefix_is_archived_with_the_replacement(
    session: SqlmemSession, db: sqlmem.MemoryDB
) -> None:
    """`prune_prefix` (an encrypted session's expiry test): the leading run of items it
    accepts leaves the session's items, kept in the archive, never an item after the
    first it refuses."""
    items = [_user("old-1"), _user("old-2"), _user("live"), _user("old-3"), _user("tail")]
    run(session.add_items(items))
    snapshot = run(
        session._get_compaction_snapshot(1, prune_prefix=lambda i: i["content"].startswith("old"))
    )
    assert snapshot is not None and snapshot.items == [_user("tail")]
    assert run(snapshot.replace_suffix(0, [SUMMARY])) is True
    assert run(session.get_items()) == [_user("live"), _user("old-3"), SUMMARY]
    archived = db.history.get_all("chat", include_archived=True)
    assert [m.content for m in archived][:2] == ["old-1", "old-2"]


def test_a_subclass_that_changes_items_gets_no_snapshot(db: sqlmem.MemoryDB) -> None:
    class Redacting(SqlmemSession):
        async def get_items(self, limit: int | None = None, *, wrapper: Any = None) -> list[Any]:
            return [{**i, "content": "-"} for i in await super().get_items(limit)]

    session = Redacting("chat", db)
    run(session.add_items([_user("secret")]))
    assert run(session._get_compaction_snapshot(5)) is None  # would bypass the redaction
    session.close()


def test_the_run_context_wrapper_is_accepted(session: SqlmemSession) -> None:
    assert _session_accepts_wrapper(session)
    wrapper: Any = object()
    run(session.add_items([_user("x")], wrapper=wrapper))
    assert run(session.get_items(wrapper=wrapper)) == [_user("x")]
    assert run(session.pop_item(wrapper=wrapper)) == _user("x")
    run(session.clear_session(wrapper=wrapper))
