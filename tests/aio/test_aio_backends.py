"""`sqlmem.aio` on every backend: the same targets as `sqlmem.open`, `async with
adb.atomic()` (commit, rollback, cancellation, nesting), `close()`, and `aclose()` racing
awaited writes (each write either committed or refused with StoreClosedError)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from targets import BACKENDS, Target, backend_target

import sqlmem
import sqlmem.aio
from sqlmem import Fact, Message, SqlmemError, StoreClosedError
from sqlmem.aio import AsyncMemoryDB
from sqlmem.protocols import Database


def _user(text: str) -> Message:
    return Message(role="user", content=text)


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    return backend_target(request, tmp_path)


async def _open(target: Target, **options: Any) -> AsyncMemoryDB:
    return await sqlmem.aio.open(target.target, agent_id=target.agent_id, **options)


def _run(main: Callable[[], Any]) -> None:
    asyncio.run(main())


@pytest.fixture
def reopen(target: Target) -> Callable[[], Database]:
    """A fresh sync handle on the same memory (the twins: the async database's own)."""
    return lambda: sqlmem.open(target.target, agent_id=target.agent_id)


def test_the_same_targets_open_the_same_backends(target: Target) -> None:
    async def main() -> None:
        async with await _open(target) as adb:
            expected = {"sqlite": "MemoryDB", "memory": "InMemoryDB", "postgres": "PostgresDB"}
            assert type(adb.sync).__name__ == expected[target.kind]
            assert await adb.history.append("s", _user("hello tea")) == 1
            fid = await adb.facts.index(Fact(content="The user likes tea"))
            assert [f.id for f in await adb.facts.search("tea")] == [fid]
            await adb.docs.write("MEMORY.md", "# Memory\n")
            stats = await adb.stats()
            assert (stats["messages_active"], stats["facts"], stats["documents"]) == (1, 1, 1)
            assert (await adb.check()).ok
            assert (await adb.maintain())["expired_facts"] == 0

    _run(main)


def test_atomic_commits_the_block_whole(target: Target) -> None:
    async def main() -> None:
        async with await _open(target) as adb:
            async with adb.atomic():
                await adb.history.append("s", _user("one"))
                await adb.facts.index(Fact(id="f1", content="one"))
                # reads inside the block see its writes
                assert await adb.history.count("s") == 1
            assert await adb.history.count("s") == 1
            assert await adb.facts.get("f1") is not None

    _run(main)


def test_atomic_rolls_back_on_an_exception(target: Target) -> None:
    async def main() -> None:
        async with await _open(target) as adb:
            await adb.history.append("s", _user("before"))
            with pytest.raises(RuntimeError):
                async with adb.atomic():
                    await adb.history.append("s", _user("inside"))
                    await adb.facts.index(Fact(id="f1", content="inside"))
                    raise RuntimeError("undo")
            assert [m.content for m in await adb.history.get_all("s")] == ["before"]
            assert await adb.facts.get("f1") is None
            await adb.history.append("s", _user("after"))  # still usable
            assert await adb.history.count("s") == 2

    _run(main)


def test_a_cancelled_block_rolls_back_and_never_commits_half(target: Target) -> None:
    async def main() -> None:
        async with await _open(target) as adb:
            started = asyncio.Event()

            async def block() -> None:
                async with adb.atomic():
                    await adb.history.append("s", _user("first half"))
                    started.set()
                    for n in range(10_000):  # cancelled somewhere in here
                        await adb.history.append("s", _user(f"second half {n}"))

            task = asyncio.create_task(block())
            await started.wait()
            await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await adb.history.count("s") == 0
            async with adb.atomic():  # the database is usable, the lock released
                await adb.history.append("s", _user("later"))
            assert await adb.history.count("s") == 1

    _run(main)


def test_a_block_cancelled_at_its_end_rolls_back_or_commits_whole(target: Target) -> None:
    async def main() -> None:
        async with await _open(target) as adb:
            outcomes = []
            for attempt in range(20):
                session = f"s{attempt}"

                async def block(session: str = session) -> None:
                    async with adb.atomic():
                        await adb.history.append(session, _user("a"))
                        await adb.history.append(session, _user("b"))

                task = asyncio.create_task(block())
                for _ in range(attempt % 5):
                    await asyncio.sleep(0)
                task.cancel()
                try:
                    await task
                    cancelled = False
                except asyncio.CancelledError:
                    cancelled = True
                count = await adb.history.count(session)
                assert count in (0, 2)  # never half
                if not cancelled:
                    assert count == 2  # reported done means committed
                outcomes.append(count)
            assert 0 in outcomes

    _run(main)


def test_nested_blocks_are_savepoints(target: Target) -> None:
    async def main() -> None:
        async with await _open(target) as adb:
            async with adb.atomic():
                await adb.history.append("s", _user("outer"))
                with pytest.raises(RuntimeError):
                    async with adb.atomic():
                        await adb.history.append("s", _user("inner"))
                        raise RuntimeError("undo the inner block only")
                async with adb.atomic():
                    await adb.history.append("s", _user("inner kept"))
            assert [m.content for m in await adb.history.get_all("s")] == ["outer", "inner kept"]

    _run(main)


def test_tasks_started_in_a_block_share_it(target: Target) -> None:
    async def main() -> None:
        async with await _open(target) as adb:
            with pytest.raises(RuntimeError):
                async with adb.atomic():
                    await asyncio.gather(
                        *(adb.history.append("s", _user(f"m{n}")) for n in range(20))
                    )
                    raise RuntimeError("undo all twenty")
            assert await adb.history.count("s") == 0

    _run(main)


def test_other_tasks_wait_for_the_block_and_never_see_half_of_it(target: Target) -> None:
    if target.kind == "memory":
        pytest.skip("the twins' atomic() holds one lock for reads too: nothing to observe")

    async def main() -> None:
        async with await _open(target) as adb:
            seen: list[int] = []
            async with adb.atomic():
                await adb.history.append("s", _user("one"))
                outside = asyncio.create_task(_count_outside(adb, seen))
                await asyncio.sleep(0.05)
                await adb.history.append("s", _user("two"))
            await outside
            assert seen and all(n in (0, 2) for n in seen)

    _run(main)


async def _count_outside(adb: AsyncMemoryDB, seen: list[int]) -> None:
    # A task created inside the block shares it: run this read from a fresh context.
    import contextvars

    loop = asyncio.get_running_loop()
    ctx = contextvars.Context()
    task = ctx.run(loop.create_task, adb.history.count("s"))
    seen.append(await task)


def test_close_is_not_an_attribute_error(target: Target) -> None:
    async def opened() -> AsyncMemoryDB:
        return await _open(target)

    adb = asyncio.run(opened())
    adb.close()  # no running loop: closes
    assert adb.closed or target.kind == "memory"

    async def inside_a_loop() -> None:
        adb = await _open(target)
        with pytest.raises(SqlmemError, match=r"aclose\(\)"):
            adb.close()
        await adb.aclose()

    _run(inside_a_loop)


@pytest.mark.parametrize("workers", [None, 1])
def test_aclose_racing_awaited_appends_drops_none(
    target: Target, reopen: Callable[[], Database], workers: int | None
) -> None:
    """500 awaited appends racing aclose(): each either committed or raised
    StoreClosedError, never a CancelledError nobody asked for, and the count stored
    equals the successes."""

    async def main() -> tuple[int, Database | None]:
        adb = await _open(target, workers=workers)

        async def append(n: int) -> str:
            try:
                await adb.history.append("race", _user(f"m{n}"))
            except StoreClosedError:
                return "refused"
            return "ok"

        tasks = [asyncio.create_task(append(n)) for n in range(500)]
        await asyncio.sleep(0)  # some are queued, some not yet submitted
        closing = asyncio.create_task(adb.aclose())
        results = await asyncio.gather(*tasks)  # a CancelledError here fails the test
        await closing
        ok = results.count("ok")
        assert ok + results.count("refused") == 500
        assert ok > 0
        return ok, adb.sync if target.kind == "memory" else None

    ok, twin = asyncio.run(main())
    db = twin if twin is not None else reopen()
    try:
        assert db.history.count("race") == ok
    finally:
        if twin is None:
            db.close()


def test_an_async_database_wraps_any_database() -> None:
    async def main() -> None:
        twin = sqlmem.open(":memory:")
        adb = AsyncMemoryDB(twin)
        await adb.history.append("s", _user("hi"))
        assert twin.history.count("s") == 1  # one memory, two handles
        await adb.aclose()
        assert not twin.closed  # not ours to close

    _run(main)


def test_a_block_that_cannot_begin_raises_busy_and_leaks_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    config = sqlmem.StoreConfig(busy_timeout_ms=100)
    holder = sqlmem.open(path, config)
    held, release = threading.Event(), threading.Event()

    def hold_the_write_lock() -> None:
        with holder.atomic():
            holder.history.append("s", _user("held"))
            held.set()
            release.wait(10)

    thread = threading.Thread(target=hold_the_write_lock)
    thread.start()
    held.wait(10)

    async def main() -> None:
        async with await sqlmem.aio.open(path, config) as adb:
            with pytest.raises(sqlmem.StorageBusyError):
                async with adb.atomic():
                    raise AssertionError("the block never begins")
            release.set()
            await asyncio.to_thread(thread.join)
            async with adb.atomic():  # nothing left behind: the next block begins
                await adb.history.append("s", _user("later"))
            assert await adb.history.count("s") == 2

    try:
        _run(main)
    finally:
        release.set()
        thread.join()
        holder.close()


def test_aclose_rolls_back_a_block_left_open(target: Target) -> None:
    async def main() -> None:
        adb = await _open(target)
        inside, go_on = asyncio.Event(), asyncio.Event()

        async def block() -> None:
            async with adb.atomic():
                await adb.history.append("s", _user("never committed"))
                inside.set()
                await go_on.wait()
                await adb.history.append("s", _user("after the close"))

        task = asyncio.create_task(block())
        await inside.wait()
        await adb.aclose()
        go_on.set()
        with pytest.raises(StoreClosedError):
            await asyncio.wait_for(task, 10)  # answered, never left waiting

    _run(main)
    with sqlmem.open(target.target, agent_id=target.agent_id) as db:
        if target.kind != "memory":  # a fresh twin is a new memory: nothing to look at
            assert db.history.count("s") == 0
