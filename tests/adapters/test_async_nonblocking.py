"""No adapter blocks the event loop: every async method of every adapter, under
blockbuster (the detector langchain-core's own suite runs), which raises
`BlockingError` for a blocking call (a file stat or read, a lock wait, a sleep, a socket)
made on the loop's thread.

Each adapter is built from a path inside the running loop, as frameworks build them
(LangChain's `RunnableWithMessageHistory` calls its session factory there): building one
must not open the file on the loop either.

Regression: `SqlmemChatMessageHistory("s", path)` opened the file in its constructor,
and blockbuster flagged the `os.stat` in 8 of langchain-core's async history tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

blockbuster = pytest.importorskip("blockbuster")
pytest.importorskip("agents")
pytest.importorskip("langchain_core")
pytest.importorskip("langgraph.store.base")

from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402

from sqlmem.adapters.langchain import SqlmemByteStore, SqlmemChatMessageHistory  # noqa: E402
from sqlmem.adapters.langgraph import (  # noqa: E402
    AsyncSqlmemSaver,
    AsyncSqlmemStore,
    SqlmemSaver,
    SqlmemStore,
)
from sqlmem.adapters.openai_agents import SqlmemSession  # noqa: E402


@pytest.fixture
def detector() -> Iterator[Any]:
    """Blockbuster over the whole process: any blocking call on a loop thread raises."""
    with blockbuster.blockbuster_ctx() as bb:
        yield bb


def _loop_is_watched() -> None:
    """The detector is live: a blocking call on the loop raises (the test can fail)."""
    with pytest.raises(blockbuster.BlockingError):
        Path(__file__).stat()


async def test_openai_session(detector: Any, tmp_path: Path) -> None:
    _loop_is_watched()
    session = SqlmemSession("s", tmp_path / "memory.db")
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


async def test_langchain_history_and_byte_store(detector: Any, tmp_path: Path) -> None:
    _loop_is_watched()
    history = SqlmemChatMessageHistory("s", tmp_path / "memory.db")
    await history.aadd_messages([HumanMessage("hi"), AIMessage("yo")])
    assert await history.aget_messages() == [HumanMessage("hi"), AIMessage("yo")]
    await history.aclear()
    assert await history.aget_messages() == []
    store = SqlmemByteStore(tmp_path / "kv.db")
    await store.amset([("a", b"1"), ("b", b"2")])
    assert await store.amget(["a", "b", "c"]) == [b"1", b"2", None]
    assert [k async for k in store.ayield_keys(prefix="a")] == ["a"]
    await store.amdelete(["a"])
    assert await store.amget(["a"]) == [None]
    await asyncio.to_thread(history.close)
    await asyncio.to_thread(store.close)


@pytest.mark.parametrize("cls", [SqlmemStore, AsyncSqlmemStore])
async def test_langgraph_store(detector: Any, tmp_path: Path, cls: type[SqlmemStore]) -> None:
    _loop_is_watched()
    store = cls(tmp_path / "memory.db", ttl={"default_ttl": 10})
    await store.aput(("users", "u1"), "prefs", {"text": "likes tea"})
    item = await store.aget(("users", "u1"), "prefs")
    assert item is not None and item.value == {"text": "likes tea"}
    assert [i.key for i in await store.asearch(("users",), query="tea")] == ["prefs"]
    assert await store.alist_namespaces() == [("users", "u1")]
    await store.adelete(("users", "u1"), "prefs")
    assert await store.asweep_ttl() == 0
    await asyncio.to_thread(store.close)


@pytest.mark.parametrize("cls", [SqlmemSaver, AsyncSqlmemSaver])
async def test_langgraph_saver(detector: Any, tmp_path: Path, cls: type[SqlmemSaver]) -> None:
    _loop_is_watched()
    saver = cls(tmp_path / "memory.db")
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
