"""Every path that appends messages gives them vectors when the database has an embedder:
the async API, the OpenAI Agents session and LangChain's chat history (both append
through the history store), and the factory's agents."""

from __future__ import annotations

from pathlib import Path

import pytest

import sqlmem
import sqlmem.aio
from sqlmem import Message
from sqlmem.embedders import HashEmbedder


async def test_the_async_api_appends_with_vectors_and_searches_by_meaning(tmp_path: Path) -> None:
    async with await sqlmem.aio.open(tmp_path / "m.db", embedder=HashEmbedder(32)) as db:
        await db.history.append("s", Message(role="user", content="green tea please"))
        await db.history.append_many("s", [Message(role="user", content="fast red car")])
        found = await db.history.search("green tea", mode="vector", top_k=1)
        assert [m.content for m in found] == ["green tea please"]
        hybrid = await db.history.search("red car", mode="hybrid", session_id="s", top_k=1)
        assert [m.seq for m in hybrid] == [2]
        assert await db.history.embed_pending() == 0


async def test_openai_agents_items_get_vectors(tmp_path: Path) -> None:
    pytest.importorskip("agents")
    from sqlmem.adapters.openai_agents import SqlmemSession

    with sqlmem.open(tmp_path / "m.db", embedder=HashEmbedder(32)) as db:
        session = SqlmemSession("chat", db)
        await session.add_items(
            [
                {"role": "user", "content": "green tea please"},
                {"role": "assistant", "content": "fast red car"},
            ]
        )
        assert db.stats()["messages_without_vectors"] == 0
        found = db.history.search("green tea", mode="vector", session_id="chat", top_k=1)
        assert [m.content for m in found] == ["green tea please"]


async def test_langchain_messages_get_vectors_sync_and_async(tmp_path: Path) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, HumanMessage

    from sqlmem.adapters.langchain import SqlmemChatMessageHistory

    with sqlmem.open(tmp_path / "m.db", embedder=HashEmbedder(32)) as db:
        history = SqlmemChatMessageHistory("chat", db)
        history.add_messages([HumanMessage("green tea please")])
        await history.aadd_messages([AIMessage("fast red car")])
        assert db.stats()["messages_without_vectors"] == 0
        found = db.history.search("red car", mode="vector", top_k=1)
        assert [m.content for m in found] == ["fast red car"]


def test_the_factorys_agents_get_vectors(tmp_path: Path) -> None:
    with sqlmem.MemoryFactory(tmp_path, embedder=HashEmbedder(32)) as factory:
        db = factory.resolve("agent-1")
        assert db is not None
        db.history.append("s", Message(role="user", content="green tea please"))
        assert [m.seq for m in db.history.search("tea", mode="vector")] == [1]
