"""No adapter blocks the event loop: every async method of every adapter, under
blockbuster (the detector langchain-core's own suite runs), which raises
`BlockingError` for a blocking call (a file stat or read, a lock wait, a sleep, a socket)
made on the loop's thread.

Each adapter is built from a path inside the running loop, as frameworks build them
(LangChain's `RunnableWithMessageHistory` calls its session factory there): building one
must not open the file on the loop either.

Each runs twice: built from a SQLite path, and over an agent of the session's throwaway
PostgreSQL server (opened before the loop starts, as an application opens its database
once): psycopg's socket reads and pool waits must stay off the loop too.

Regression: `SqlmemChatMessageHistory("s", path)` opened the file in its constructor,
and blockbuster flagged the `os.stat` in 8 of langchain-core's async history tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

blockbuster = pytest.importorskip("blockbuster")
pytest.importorskip("agents")
pytest.importorskip("langchain_core")
pytest.importorskip("langgraph.store.base")
pytest.importorskip("pydantic_ai")
pytest.importorskip("anthropic")

from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402

import sqlmem  # noqa: E402
from sqlmem.adapters.anthropic import SqlmemMemoryTool  # noqa: E402
from sqlmem.adapters.langchain import SqlmemByteStore, SqlmemChatMessageHistory  # noqa: E402
from sqlmem.adapters.langgraph import (  # noqa: E402
    AsyncSqlmemSaver,
    AsyncSqlmemStore,
    SqlmemSaver,
    SqlmemStore,
)
from sqlmem.adapters.openai_agents import SqlmemSession  # noqa: E402
from sqlmem.adapters.pydantic_ai import memory_instructions, memory_toolset  # noqa: E402


class Where:
    """`where(name)`: what an adapter is built from: a path named `name` in the test's
    folder, or (every name alike) one PostgreSQL agent opened before the loop runs.
    `probe`: a database of the same backend, open, to show the detector catches its
    queries."""

    def __init__(self, build: Callable[[str], Any], probe: Any) -> None:
        self._build, self.probe = build, probe

    def __call__(self, name: str) -> Any:
        return self._build(name)


@pytest.fixture(params=["sqlite-path", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Where]:
    if request.param == "postgres":
        db = request.getfixturevalue("open_pg")()
        yield Where(lambda name: db, db)
        return
    probe = sqlmem.open(tmp_path / "probe.db")
    yield Where(lambda name: tmp_path / name, probe)
    probe.close()


#: Waits blockbuster's own list misses, watched too: psycopg waits for the server in C
#: (its `wait_c`), below the socket functions blockbuster patches, and apsw runs SQLite
#: in C, where blockbuster watches only the `sqlite3` module. So psycopg's wait
#: functions, the pool's checkout, and sqlmem's SQLite engine's read and write entries.
_ALSO_WATCHED = (
    ("psycopg.waiting", None, "wait"),
    ("psycopg.waiting", None, "wait_conn"),
    ("psycopg_pool", "ConnectionPool", "getconn"),
    ("sqlmem.sqlite.engine", "Engine", "read"),
    ("sqlmem.sqlite.engine", "Engine", "write"),
)


@pytest.fixture
def detector() -> Iterator[Any]:
    """Blockbuster over the whole process (and the waits above): any blocking call on a
    loop thread raises."""
    import importlib

    bb = blockbuster.BlockBuster()
    for module_name, class_name, name in _ALSO_WATCHED:
        owner = importlib.import_module(module_name)
        if class_name is not None:
            owner = getattr(owner, class_name)
        full_name = ".".join(n for n in (module_name, class_name, name) if n)
        bb.functions[full_name] = blockbuster.BlockBusterFunction(owner, name)
    bb.activate()
    try:
        yield bb
    finally:
        bb.deactivate()


def _loop_is_watched(where: Where) -> None:
    """The detector is live: a blocking call on the loop raises (the test can fail), a
    query of the backend's database included."""
    with pytest.raises(blockbuster.BlockingError):
        Path(__file__).stat()
    with pytest.raises(blockbuster.BlockingError):
        where.probe.history.get_all("probe")


async def test_openai_session(where: Where, detector: Any) -> None:
    _loop_is_watched(where)
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
    _loop_is_watched(where)
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
    _loop_is_watched(where)
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
    _loop_is_watched(where)
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
    _loop_is_watched(where)
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
    _loop_is_watched(where)
    given = where("memory.db")
    db = given if not isinstance(given, Path) else await asyncio.to_thread(sqlmem.open, given)
    agent = Agent(TestModel(), toolsets=[memory_toolset(db)], instructions=memory_instructions(db))
    result = await agent.run("what do I drink?")
    assert result.output
    if isinstance(given, Path):
        await asyncio.to_thread(db.close)
