"""SPEC 18: `sqlmem.aio`: the stores' methods awaited, off the event loop; cancellation never
leaves half a write; 1,000 concurrent tasks; sync and async handles on one file."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from pathlib import Path

import pytest

import sqlmem
import sqlmem.aio
from sqlmem import Fact, Message


def _user(text: str) -> Message:
    return Message(role="user", content=text)


def test_every_method_awaited_gives_the_sync_result(tmp_path: Path) -> None:
    async def main() -> None:
        async with await sqlmem.aio.open(tmp_path / "memory.db") as adb:
            h, f = adb.history, adb.facts
            assert await h.append("s", _user("hello apples")) == 1
            assert await h.append_many("s", [_user("two"), _user("three")]) == [2, 3]
            assert [m.content for m in await h.get_recent("s", 2)] == ["two", "three"]
            assert await h.count("s") == 3
            await h.set_summary("s", "sum")
            assert await h.get_summary("s") == "sum"
            assert [m.seq for m in await h.search("apples")] == [1]
            assert await h.compact("s", keep_last=1) == 2
            assert len(await h.get_all("s", include_archived=True)) == 3
            assert await h.sessions() == ["s"]
            fid = await f.index(Fact(content="The user likes tea", tags=["drink"]))
            assert await f.index_many([Fact(content="x"), Fact(content="y")])
            assert (await f.get(fid)).content == "The user likes tea"  # type: ignore[union-attr]
            assert [x.id for x in await f.search("tea", tags=["drink"])] == [fid]
            assert await f.tags() == {"drink": 1}
            assert await f.count() == 3
            assert len(await f.list(limit=2)) == 2
            kept = await f.remember(Fact(content="Likes tea.", layer="episodic"))
            assert await f.remember(Fact(content="likes TEA", layer="episodic")) == kept
            assert (await f.get(kept)).hits == 2  # type: ignore[union-attr]
            assert await f.promote_eligible(min_confidence=0.5) == [kept]
            assert (await f.promote(kept, "procedural")).layer == "procedural"
            assert await f.expire() == 0
            await f.delete(kept)
            await f.delete(fid)
            with pytest.raises(sqlmem.FactNotFoundError):
                await f.delete(fid)
            assert (await adb.stats())["facts"] == 2
            assert (await adb.check()).ok
            d = adb.docs
            assert (await d.write("MEMORY.md", "# Memory\n- tea")).created
            assert await d.edit("MEMORY.md", "tea", "green tea") == 1
            assert (await d.read("MEMORY.md")).revision == 2  # type: ignore[union-attr]
            assert [r.revision for r in await d.revisions("MEMORY.md")] == [1]
            assert (await d.search("green"))[0].path == "MEMORY.md"
            assert (await d.render_files()).startswith("--- MEMORY.md ---")
            assert (await adb.maintain())["expired_facts"] == 0
            await h.purge("s")
            assert await h.sessions() == []
            assert adb.history.sync is adb.sync.history

    asyncio.run(main())


def test_the_loop_keeps_running_while_a_write_waits_for_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    holder = sqlmem.open(path)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # another connection holds the write lock
        with holder.atomic():
            holder.history.append("s", _user("held"))
            held.set()
            release.wait(10)

    async def main() -> float:
        async with await sqlmem.aio.open(path) as adb:
            thread = threading.Thread(target=hold)
            thread.start()
            assert await asyncio.to_thread(held.wait, 10)
            write = asyncio.create_task(adb.history.append("s", _user("waits")))
            worst = 0.0
            for _ in range(20):  # ~0.4 s of ticks while the write waits
                before = time.monotonic()
                await asyncio.sleep(0.02)
                worst = max(worst, time.monotonic() - before)
            assert not write.done()
            release.set()
            assert await write == 2
            thread.join(10)
            return worst

    try:
        worst = asyncio.run(main())
    finally:
        holder.close()
    assert worst < 0.3  # a blocked loop would have stalled for the whole hold


def test_cancelled_tasks_leave_whole_batches_and_a_usable_store(tmp_path: Path) -> None:
    rng = random.Random(7)

    async def main() -> None:
        async with await sqlmem.aio.open(tmp_path / "memory.db") as adb:
            tasks = [
                asyncio.create_task(
                    adb.history.append_many("s", [_user(f"batch {i} part {j}") for j in range(10)])
                )
                for i in range(60)
            ]
            for _ in range(30):
                await asyncio.sleep(rng.random() * 0.002)
                rng.choice(tasks).cancel()
            done = await asyncio.gather(*tasks, return_exceptions=True)
            completed = [r for r in done if isinstance(r, list)]
            assert all(isinstance(r, (list, asyncio.CancelledError)) for r in done)
            messages = await adb.history.get_all("s")
            assert len(messages) % 10 == 0  # never part of a batch
            assert len(messages) >= 10 * len(completed)
            batches: dict[str, list[str]] = {}
            for m in messages:
                batch, _, part = m.content.rpartition(" part ")
                batches.setdefault(batch, []).append(part)
            assert all(parts == [str(j) for j in range(10)] for parts in batches.values())
            assert [m.seq for m in messages] == list(range(1, len(messages) + 1))
            assert await adb.history.append("s", _user("still usable")) == len(messages) + 1
            assert (await adb.check()).ok

    asyncio.run(main())


def test_a_thousand_concurrent_tasks_lose_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        async with await sqlmem.aio.open(tmp_path / "memory.db") as adb:
            seqs = await asyncio.gather(
                *(adb.history.append(f"s{i % 10}", _user(f"m{i}")) for i in range(1000))
            )
            assert len(seqs) == 1000
            counts = await asyncio.gather(*(adb.history.count(f"s{i}") for i in range(10)))
            assert counts == [100] * 10
            for i in range(10):
                got = [m.seq for m in await adb.history.get_all(f"s{i}")]
                assert got == list(range(1, 101))

    asyncio.run(main())


def test_sync_and_async_handles_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"

    async def main() -> None:
        with sqlmem.open(path) as db:
            adb = sqlmem.aio.AsyncMemoryDB(db)  # over the program's own MemoryDB
            db.facts.index(Fact(id="a", content="written sync"))
            await adb.facts.index(Fact(id="b", content="written async"))
            assert {f.id for f in db.facts.list()} == {"a", "b"}
            assert {f.id for f in await adb.facts.list()} == {"a", "b"}
            await adb.aclose()
            assert not db.closed  # it did not open the database, so it does not close it
            with pytest.raises(sqlmem.StoreClosedError):
                await adb.facts.count()
        async with await sqlmem.aio.open(path) as other:  # another engine on the file
            assert await other.facts.count() == 2

    asyncio.run(main())


def test_closed_and_bad_arguments(tmp_path: Path) -> None:
    async def main() -> None:
        adb = await sqlmem.aio.open(tmp_path / "memory.db")
        await adb.aclose()
        await adb.aclose()  # idempotent
        assert adb.closed
        with pytest.raises(sqlmem.StoreClosedError):
            await adb.history.count("s")
        with pytest.raises(sqlmem.InvalidArgumentError):
            sqlmem.aio.AsyncMemoryDB("memory.db")  # type: ignore[arg-type]
        with pytest.raises(sqlmem.InvalidArgumentError):  # ":memory:" opens the twins (0.3)
            await sqlmem.aio.open("file:memory.db?mode=rwc")

    asyncio.run(main())
