"""`SqlmemSession` (OpenAI Agents SDK) on PostgreSQL and in memory: the session tests
that take a database (imported from test_openai_agents, run here over each backend), and
an `AsyncMemoryDB` over each backend."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("agents")

from backends import BACKENDS, other_backend_db
from test_openai_agents import (
    ITEMS,
    test_agent_runs_with_the_session,
    test_any_json_item_round_trips,
    test_bad_arguments,
    test_cancelled_write_reports_only_once_done,
    test_default_limit_and_settings,
    test_get_items_limit_is_exactly_the_latest,
    test_item_text_is_searchable,
    test_items_among_other_metadata_read_back,
    test_items_json_cannot_hold_are_refused_whole,
    test_messages_written_by_other_code_read_as_easy_input,
    test_pop_item_removes_the_newest,
    test_sessions_are_separate_and_clear_removes_one,
    test_too_deep_item_is_refused,
    test_tool_calls_become_sqlmem_tool_messages,
)

import sqlmem
from sqlmem.adapters.openai_agents import SqlmemSession

__all__ = [
    "test_agent_runs_with_the_session",
    "test_any_json_item_round_trips",
    "test_bad_arguments",
    "test_cancelled_write_reports_only_once_done",
    "test_default_limit_and_settings",
    "test_get_items_limit_is_exactly_the_latest",
    "test_item_text_is_searchable",
    "test_items_among_other_metadata_read_back",
    "test_items_json_cannot_hold_are_refused_whole",
    "test_messages_written_by_other_code_read_as_easy_input",
    "test_pop_item_removes_the_newest",
    "test_sessions_are_separate_and_clear_removes_one",
    "test_too_deep_item_is_refused",
    "test_tool_calls_become_sqlmem_tool_messages",
]


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest) -> Iterator[Any]:
    yield from other_backend_db(request)


@pytest.fixture
def session(db: Any) -> Iterator[Any]:
    s = SqlmemSession("chat:1", db)
    yield s
    s.close()


def test_a_session_over_an_async_database_of_any_backend(db: Any) -> None:
    async def main() -> list[Any]:
        adb = sqlmem.aio.AsyncMemoryDB(db)
        session = SqlmemSession("s", adb)
        await session.add_items(ITEMS)
        items = await session.get_items(limit=2)
        session.close()
        assert not adb.closed
        return items

    assert asyncio.run(main()) == ITEMS[-2:]


def test_every_item_kind_round_trips_and_concurrent_writers_lose_nothing(db: Any) -> None:
    """Every item deep-equal; then tasks on one loop and threads with loops (and sessions)
    of their own, on one session of the shared database."""
    session = SqlmemSession("busy", db)
    assert asyncio.run(_add_and_get(session, ITEMS)) == ITEMS
    asyncio.run(session.clear_session())

    def thread_worker(t: int) -> None:
        other = SqlmemSession("busy", db)
        try:
            for i in range(20):
                asyncio.run(other.add_items([{"role": "user", "content": f"t{t}-{i}"}]))
        finally:
            other.close()

    threads = [threading.Thread(target=thread_worker, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()

    async def tasks() -> None:
        await asyncio.gather(
            *(session.add_items([{"role": "user", "content": f"a{i}"}]) for i in range(50))
        )

    asyncio.run(tasks())
    for t in threads:
        t.join()
    got = [i["content"] for i in asyncio.run(session.get_items())]
    expected = [f"a{i}" for i in range(50)] + [f"t{t}-{i}" for t in range(3) for i in range(20)]
    assert sorted(got) == sorted(expected)
    session.close()


async def _add_and_get(session: SqlmemSession, items: list[Any]) -> list[Any]:
    await session.add_items(items)
    return await session.get_items()
