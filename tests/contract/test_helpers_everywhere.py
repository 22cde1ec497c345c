"""Every helper, sync and async, on every backend: the async forms in `sqlmem.aio` give the
sync forms' results (with a sync or an async model), and a sync helper given an async
database or store fails at once naming the async form."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import asdict
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from targets import BACKENDS, Target, backend_target

import sqlmem
import sqlmem.aio
from sqlmem import Fact, InvalidArgumentError, Message
from sqlmem.protocols import Database

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
QUESTION = "what tea does the user like?"


def model(prompt: str) -> str:
    """A scripted model answering the consolidators' and the extractor's prompts."""
    if '"history_entry"' in prompt:
        return json.dumps(
            {"history_entry": "Talked about tea.", "memory_update": "# Memory\n- likes tea\n"}
        )
    if '"profile_update"' in prompt:
        return json.dumps(
            {
                "should_update": True,
                "reason": "a preference",
                "daily_entry": "The user likes green tea.",
                "memory_update": "# Memory\n- likes green tea\n",
                "profile_update": "",
            }
        )
    if '"memory_content"' in prompt:
        return json.dumps(
            {"should_update": True, "reason": "notes", "memory_content": "# Memory\n- notes\n"}
        )
    raise AssertionError(f"unexpected prompt: {prompt[:80]}")


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    return backend_target(request, tmp_path)


@pytest.fixture
def open_fresh(target: Target, tmp_path: Path) -> Any:
    """`open_fresh(n)`: the n-th fresh database of the parametrised backend, seeded."""
    from pgserver import new_agent_id

    opened: list[Database] = []

    def fresh(n: int) -> Database:
        if target.kind == "sqlite":
            db = sqlmem.open(str(tmp_path / f"memory-{n}.db"))
        elif target.kind == "memory":
            db = sqlmem.open(":memory:")
        else:
            db = sqlmem.open(target.target, agent_id=new_agent_id())
        opened.append(db)
        _seed(db)
        return db

    yield fresh
    for db in opened:
        db.close()


def _seed(db: Database) -> None:
    db.facts.index_many(
        [
            Fact(id="f1", content="The user likes green tea", layer="semantic"),
            Fact(id="f2", content="Brew green tea at 80 degrees", layer="procedural"),
            Fact(id="f3", content="Talked about tea with the user", layer="episodic"),
            Fact(id="f4", content="The user has a dog called Rex"),
        ]
    )
    turns = []
    for n in range(6):
        turns.append(Message(role="user", content=f"question {n} about which tea to brew today"))
        turns.append(Message(role="assistant", content=f"answer {n}: green tea, steeped gently"))
    db.history.append_many("s", turns)
    db.docs.append_daily("Had green tea with the user.", day=date(2026, 5, 30))


def _pack_view(pack: Any) -> Any:
    return [(i.fact.id, i.layer) for i in pack.items], pack.text


def _window_view(built: Any) -> Any:
    return [m.content for m in built.messages], built.trimmed, built.compacted, built.error


def _result_view(result: Any) -> Any:
    view = asdict(result)
    view.pop("history_entry", None)  # stamped with the current minute
    return view


def sync_scenario(db: Database) -> dict[str, Any]:
    tools = sqlmem.MemoryTools(db)
    out: dict[str, Any] = {
        "specs": tools.specs("anthropic"),
        "search": tools.call("search_memory", json.dumps({"query": "tea"})),
        "bad call": tools.call("search_memory", "not json"),
        "pack": _pack_view(sqlmem.build_memory_pack(db.facts, QUESTION, now=NOW)),
        "inject": sqlmem.inject_memory(db.facts, QUESTION),
    }
    consolidator = sqlmem.Consolidator(db, model, memory_window=6, keep_last=2)
    out["consolidate"] = _result_view(consolidator.maybe_consolidate("s"))
    extractor = sqlmem.WorkspaceExtractor(db, model, min_messages=2)
    out["extract"] = asdict(extractor.run("s"))
    out["daily"] = _result_view(sqlmem.consolidate_daily_notes(db, model))
    window = sqlmem.ContextWindow(db.history, max_input_tokens=120)
    out["window"] = _window_view(window.build("s", "You are kind.", QUESTION, docs=db.docs))
    out["emergency"] = asdict(sqlmem.ContextWindow(db.history).emergency("s"))
    out["after"] = [m.content for m in db.history.get_all("s")]
    return out


async def async_scenario(adb: sqlmem.aio.AsyncMemoryDB, complete: Any) -> dict[str, Any]:
    aio = sqlmem.aio
    tools = aio.MemoryTools(adb)
    out: dict[str, Any] = {
        "specs": await tools.specs("anthropic"),
        "search": await tools.call("search_memory", json.dumps({"query": "tea"})),
        "bad call": await tools.call("search_memory", "not json"),
        "pack": _pack_view(await aio.build_memory_pack(adb.facts, QUESTION, now=NOW)),
        "inject": await aio.inject_memory(adb.facts, QUESTION),
    }
    consolidator = aio.Consolidator(adb, complete, memory_window=6, keep_last=2)
    out["consolidate"] = _result_view(await consolidator.maybe_consolidate("s"))
    extractor = aio.WorkspaceExtractor(adb, complete, min_messages=2)
    out["extract"] = asdict(await extractor.run("s"))
    out["daily"] = _result_view(await aio.consolidate_daily_notes(adb, complete))
    window = aio.ContextWindow(adb.history, max_input_tokens=120)
    out["window"] = _window_view(await window.build("s", "You are kind.", QUESTION, docs=adb.docs))
    out["emergency"] = asdict(await aio.ContextWindow(adb.history).emergency("s"))
    out["after"] = [m.content for m in await adb.history.get_all("s")]
    return out


def test_async_helpers_give_the_sync_results(open_fresh: Callable[[int], Database]) -> None:
    expected = sync_scenario(open_fresh(0))
    assert expected["consolidate"]["consolidated"] and expected["extract"]["ran"]
    assert expected["daily"]["memory_updated"] and "f1" in expected["search"]

    async def model_async(prompt: str) -> str:
        await asyncio.sleep(0)
        return model(prompt)

    async def main() -> list[dict[str, Any]]:
        results = []
        for n, complete in ((1, model), (2, model_async)):
            adb = sqlmem.aio.AsyncMemoryDB(open_fresh(n))
            try:
                results.append(await async_scenario(adb, complete))
            finally:
                await adb.aclose()
        return results

    with_sync_model, with_async_model = asyncio.run(main())
    assert with_sync_model == expected
    assert with_async_model == expected


def test_an_async_model_runs_on_the_loop_and_never_blocks_it(
    open_fresh: Callable[[int], Database],
) -> None:
    async def main() -> None:
        adb = sqlmem.aio.AsyncMemoryDB(open_fresh(0))
        loop_thread = threading.get_ident()
        ticks = 0
        calls: list[int] = []

        async def slow_model(prompt: str) -> str:
            calls.append(threading.get_ident())
            await asyncio.sleep(0.05)  # the loop keeps running meanwhile
            return model(prompt)

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.005)

        ticking = asyncio.create_task(ticker())
        consolidator = sqlmem.aio.Consolidator(adb, slow_model, memory_window=6, keep_last=2)
        result = await consolidator.maybe_consolidate("s")
        ticking.cancel()
        await adb.aclose()
        assert result.consolidated
        assert calls == [loop_thread]
        assert ticks >= 3

    asyncio.run(main())


def test_async_helpers_inside_an_atomic_block_join_it(
    open_fresh: Callable[[int], Database],
) -> None:
    async def main() -> None:
        adb = sqlmem.aio.AsyncMemoryDB(open_fresh(0))
        tools = sqlmem.aio.MemoryTools(adb)
        with pytest.raises(RuntimeError):
            async with adb.atomic():
                answer = await tools.call(
                    "save_memory", json.dumps({"content": "The user drinks oolong"})
                )
                assert "id" in json.loads(answer)
                assert "oolong" in await sqlmem.aio.inject_memory(adb.facts, "oolong")
                raise RuntimeError("undo")
        assert await sqlmem.aio.inject_memory(adb.facts, "oolong") == ""
        await adb.aclose()

    asyncio.run(main())


def test_sync_helpers_refuse_async_handles_naming_the_async_form(
    open_fresh: Callable[[int], Database],
) -> None:
    async def main() -> None:
        adb = sqlmem.aio.AsyncMemoryDB(open_fresh(0))
        try:
            mixed: Any = [adb.sync.facts, adb.facts]  # one async store among sync ones
            daily: Any = sqlmem.consolidate_daily_notes
            cases: list[tuple[str, Callable[[], object]]] = [
                ("sqlmem.aio.MemoryTools", lambda: sqlmem.MemoryTools(adb)),  # type: ignore[arg-type]
                ("sqlmem.aio.build_memory_pack", lambda: sqlmem.build_memory_pack(adb.facts, "x")),  # type: ignore[arg-type]
                ("sqlmem.aio.build_memory_pack", lambda: sqlmem.build_memory_pack(mixed, "x")),
                ("sqlmem.aio.inject_memory", lambda: sqlmem.inject_memory(adb.facts, "x")),  # type: ignore[arg-type]
                ("sqlmem.aio.ContextWindow", lambda: sqlmem.ContextWindow(adb.history)),  # type: ignore[arg-type]
                ("sqlmem.aio.Consolidator", lambda: sqlmem.Consolidator(adb, model)),  # type: ignore[arg-type]
                ("sqlmem.aio.WorkspaceExtractor", lambda: sqlmem.WorkspaceExtractor(adb, model)),  # type: ignore[arg-type]
                ("sqlmem.aio.consolidate_daily_notes", lambda: daily(adb, model)),
            ]  # fmt: skip
            for form, make in cases:
                with pytest.raises(InvalidArgumentError, match=form.replace(".", r"\.")):
                    make()
        finally:
            await adb.aclose()

    asyncio.run(main())
