"""An adapter's `close()` racing awaited writes: each write either lands or raises
StoreClosedError; none turns into a CancelledError of a task nobody cancelled (the
OpenAI Agents session here; every adapter closes through the same runner)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import sqlmem
from sqlmem import StoreClosedError
from sqlmem.adapters.openai_agents import SqlmemSession


def test_close_racing_add_items_drops_none(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"

    async def main() -> int:
        session = SqlmemSession("race", path)

        async def add(n: int) -> str:
            try:
                await session.add_items([{"role": "user", "content": f"m{n}"}])
            except StoreClosedError:
                return "refused"
            return "ok"

        tasks = [asyncio.create_task(add(n)) for n in range(300)]
        for _ in range(3):  # every task has submitted its write, few have run
            await asyncio.sleep(0)
        session.close()
        results = await asyncio.gather(*tasks)  # a CancelledError here fails the test
        assert results.count("ok") + results.count("refused") == 300
        return results.count("ok")

    ok = asyncio.run(main())
    assert ok > 0
    with sqlmem.open(path) as db:
        assert db.history.count("race") == ok
