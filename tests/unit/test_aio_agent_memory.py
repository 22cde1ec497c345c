"""`sqlmem.aio.AgentMemory`: the sync turn, awaited, over an async database; a sync or an
async `complete` (the async one awaited on the caller's loop), the loop never blocked by
the model, and a sync database refused with a message naming the sync form."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

import sqlmem
import sqlmem.aio
from sqlmem import InvalidArgumentError, Message

ENTRY = json.dumps({"history_entry": "They counted.", "memory_update": ""})


async def _turns(memory: sqlmem.aio.AgentMemory, count: int) -> None:
    for i in range(count):
        built = await memory.before("s", f"count to {i}, please")
        assert built.messages[-1].content == f"count to {i}, please"
        await memory.after("s", Message(role="assistant", content=f"{i}"))


async def test_an_async_model_is_awaited_on_the_callers_loop(tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()
    seen: list[tuple[bool, bool]] = []

    async def complete(prompt: str) -> str:
        on_loop = asyncio.get_running_loop() is loop
        seen.append((on_loop, threading.current_thread() is threading.main_thread()))
        await asyncio.sleep(0)
        return ENTRY

    async with await sqlmem.aio.open(tmp_path / "m.db") as adb:
        memory = sqlmem.aio.AgentMemory(adb, complete, memory_window=4, keep_last=2, extract=False)
        await _turns(memory, 3)
        assert seen == [(True, True)]  # one consolidation, on the loop's own thread
        assert await adb.history.count("s") == 2
        history_md = await adb.docs.read("HISTORY.md")
        assert history_md is not None and history_md.content.endswith("They counted.")
        assert len(await adb.history.get_all("s", include_archived=True)) == 6


async def test_a_sync_model_runs_off_the_loop(tmp_path: Path) -> None:
    threads: list[bool] = []

    def complete(prompt: str) -> str:
        threads.append(threading.current_thread() is threading.main_thread())
        return ENTRY

    async with await sqlmem.aio.open(tmp_path / "m.db") as adb:
        memory = sqlmem.aio.AgentMemory(adb, complete, memory_window=4, keep_last=2, extract=False)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await _turns(memory, 3)
        task.cancel()
        assert threads == [False]
        assert ticks > 0  # the loop kept running while the turns were stored


async def test_a_failing_async_model_never_raises(tmp_path: Path) -> None:
    async def complete(prompt: str) -> str:
        raise ConnectionError("down")

    async with await sqlmem.aio.open(tmp_path / "m.db") as adb:
        memory = sqlmem.aio.AgentMemory(adb, complete, memory_window=4, keep_last=2)
        await _turns(memory, 4)
        assert await adb.history.count("s") == 8
        assert await adb.docs.read("HISTORY.md") is None


async def test_a_sync_database_is_refused(tmp_path: Path) -> None:
    with sqlmem.open(tmp_path / "m.db") as db:
        with pytest.raises(InvalidArgumentError, match=r"sqlmem\.AgentMemory"):
            sqlmem.aio.AgentMemory(db, lambda prompt: "")
        async with sqlmem.aio.AsyncMemoryDB(db) as adb:
            with pytest.raises(InvalidArgumentError, match="callable"):
                sqlmem.aio.AgentMemory(adb, "model")  # type: ignore[arg-type]
