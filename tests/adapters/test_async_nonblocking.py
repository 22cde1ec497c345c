"""No adapter blocks the event loop: every async method of every adapter, under
blockbuster (the detector langchain-core's own suite runs), which raises
`BlockingError` for a blocking call (a file stat or read, a lock wait, a sleep, a socket)
made on the loop's thread.

Each adapter is built from a path inside the running loop, as frameworks build them
(LangChain's `RunnableWithMessageHistory` calls its session factory there): building one
must not open the file on the loop either.

Each runs twice: built from a SQLite path, and over an agent of the session's throwaway
PostgreSQL server (opened before the loop starts, as an application opens its database
once): psycopg's socket reads and pool waits must stay off the loop too (the detector
and what it watches besides blockbuster's own list: `loop_watch.py`; the ADK services'
test is in `test_adk.py`, which runs in a venv of its own).

Regression: `SqlmemChatMessageHistory("s", path)` opened the file in its constructor,
and blockbuster flagged the `os.stat` in 8 of langchain-core's async history tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("blockbuster")
pytest.importorskip("agents")
pytest.importorskip("langchain_core")
pytest.importorskip("langgraph.store.base")
pytest.importorskip("pydantic_ai")
pytest.importorskip("anthropic")

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from loop_watch import Where, loop_is_watched, watching, where_for
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

import sqlmem
from sqlmem.adapters.anthropic import SqlmemMemoryTool
from sqlmem.adapters.langchain import SqlmemByteStore, SqlmemChatMessageHistory
from sqlmem.adapters.langgraph import (
    AsyncSqlmemSaver,
    AsyncSqlmemStore,
    SqlmemSaver,
    SqlmemStore,
)
from sqlmem.adapters.openai_agents import SqlmemSession
from sqlmem.adapters.pydantic_ai import memory_instructions, memory_toolset


@pytest.fixture(params=["sqlite-path", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Where]:
    yield from where_for(request.param, request, tmp_path)


@pytest.fixture
def detector() -> Iterator[Any]:
    with watching() as bb:
        yield bb


async def test_openai_session(where: Where, detector: Any) -> None:
    loop_is_watched(where)
    session = SqlmemSession("s", where("memory.db"))
    items = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    await session.add_items(items)
    assert await session.get_items() == items
    assert await session.get_items(limit=1) == [{"role": "assistant", "content": "yo"}]
    snapshot = await session._get_compaction_snapshot(5)
    assert snapshot is not None and snapshot.complete
    assert await snapshot.replace_suffix(0, [{"role": "user", "content": "summary"}])
    assert await session.pop_item() == {"role": "user", "content": "summary"}
    await session.clear_session()
    assert await session.get_items() == []
    await asyncio.to_thread(session.close)


async def test_langchain_history_and_byte_store(where: Where, detector: Any) -> None:
    loop_is_watched(where)
    history = SqlmemChatMessageHistory("s", where("memory.db"))
    await history.aadd_messages([HumanMessage("hi"), AIMessage("yo")])
    assert await history.aget_messages() == [HumanMessage("hi"), AIMessage("yo")]
    await history.aclear()
    assert await history.aget_messages() == []
    store = SqlmemByteStore(where("kv.db"))
    await store.amset([("a", b"1"), ("b", b"2")])
    assert await store.amget(["a", "b", "c"]) == [b"1", b"2", None]
    assert [k async for k in store.ayield_keys(prefix="a")] == ["a"]
    await store.amdelete(["a"])
    assert await store.amget(["a"]) == [None]
    await asyncio.to_thread(history.close)
    await asyncio.to_thread(store.close)


@pytest.mark.parametrize("cls", [SqlmemStore, AsyncSqlmemStore])
async def test_langgraph_store(where: Where, detector: Any, cls: type[SqlmemStore]) -> None:
    loop_is_watched(where)
    store = cls(where("memory.db"), ttl={"default_ttl": 10})
    await store.aput(("users", "u1"), "prefs", {"text": "likes tea"})
    item = await store.aget(("users", "u1"), "prefs")
    assert item is not None and item.value == {"text": "likes tea"}
    assert [i.key for i in await store.asearch(("users",), query="tea")] == ["prefs"]
    assert await store.alist_namespaces() == [("users", "u1")]
    await store.adelete(("users", "u1"), "prefs")
    assert await store.asweep_ttl() == 0
    await asyncio.to_thread(store.close)


@pytest.mark.parametrize("cls", [SqlmemSaver, AsyncSqlmemSaver])
async def test_langgraph_saver(where: Where, detector: Any, cls: type[SqlmemSaver]) -> None:
    loop_is_watched(where)
    saver = cls(where("memory.db"))
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    stored = await saver.aput(config, empty_checkpoint(), {"step": 1}, {})
    await saver.aput_writes(stored, [("channel", "value")], "task-1")
    found = await saver.aget_tuple(config)
    assert found is not None and found.pending_writes == [("task-1", "channel", "value")]
    assert len([t async for t in saver.alist(config)]) == 1
    await saver.acopy_thread("t", "u")
    await saver.aprune(["u"])
    await saver.adelete_thread("t")
    assert await saver.aget_tuple(config) is None
    await asyncio.to_thread(saver.close)


async def test_anthropic_memory_tool(where: Where, detector: Any) -> None:
    loop_is_watched(where)
    given = where("memory.db")
    db = given if not isinstance(given, Path) else await asyncio.to_thread(sqlmem.open, given)
    tool = SqlmemMemoryTool(db)
    create = {"command": "create", "path": "/memories/notes.md", "file_text": "tea\n"}
    assert not (await tool.arun(create)).is_error
    viewed = await tool.arun({"command": "view", "path": "/memories/notes.md"})
    assert "tea" in viewed.content
    if isinstance(given, Path):
        await asyncio.to_thread(db.close)


async def test_pydantic_ai_toolset_and_instructions(where: Where, detector: Any) -> None:
    loop_is_watched(where)
    given = where("memory.db")
    db = given if not isinstance(given, Path) else await asyncio.to_thread(sqlmem.open, given)
    agent = Agent(TestModel(), toolsets=[memory_toolset(db)], instructions=memory_instructions(db))
    result = await agent.run("what do I drink?")
    assert result.output
    if isinstance(given, Path):
        await asyncio.to_thread(db.close)
