"""Runner rows for measurements that live elsewhere or had none: tools/MCP and async.

- T1 (issue 18): `MemoryTools.call("search_memory", json)` vs `facts.search` plus JSON
  encoding of the same result (`benchmarks.tools.t1_call_overhead`); target p50 <= 1.3x.
- T2 (issue 18): one MCP round trip over stdio (`benchmarks.tools.t2_mcp_round_trip`,
  needs the `mcp` extra); target p50 < 5 ms (the "raw" column is the 5 ms budget).
- A1 (SPEC 18): `sqlmem.aio` append + get_recent(50) awaited one at a time vs the same
  sync calls on the same kind of file (the cost of going off the event loop), and 1,000
  concurrent tasks appending to one file: no error, no lost write.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time

import sqlmem

from .context import Context
from .harness import Row, Skip, cost_ratio_rate, median, throughput_rounds

__all__ = ["a1_async", "t1_tool_call", "t2_mcp_round_trip"]


def t1_tool_call(ctx: Context) -> list[Row]:
    from .tools import t1_call_overhead

    facts = min(ctx.sizes.w3_facts, 20_000)
    got = t1_call_overhead(ctx.folder("t1"), facts, ctx.sizes.w3_queries)
    p50 = got["p50_us"]
    row = Row(f"T1 MemoryTools.call search_memory, {facts:,} facts (vs search + JSON)",
              "p50 µs", p50["call"], p50["search+json"], got["ratio_call_vs_search_json"],
              "p50 <= 1.3x (issue 18)", 1.3, extra=got)  # fmt: skip
    if not got["same_results"]:
        row.failed_condition = "call() and search + JSON disagree"
    return [row]


def t2_mcp_round_trip(ctx: Context) -> list[Row]:
    if importlib.util.find_spec("mcp") is None:
        raise Skip("the mcp extra is not installed")
    from .tools import t2_mcp_round_trip as measure

    calls = max(ctx.sizes.w2_calls // 4, 10)
    got = measure(ctx.folder("t2"), calls)
    ms = got["p50_ms"]
    return [Row("T2 MCP search_memory round trip over stdio (raw = the 5 ms budget)",
                "p50 ms", ms, 5.0, ms / 5.0, "p50 < 5 ms (issue 18)", 1.0, extra=got)]  # fmt: skip


def a1_async(ctx: Context) -> list[Row]:
    import sqlmem.aio

    n = max(ctx.sizes.w1_messages // 4, 40)
    rounds = ctx.sizes.w1_rounds
    rows = ctx.corpus.messages(n, 1, seed=71)
    messages = [sqlmem.Message(role=r.role, content=r.content) for r in rows]  # type: ignore[arg-type]
    bounds = [n * r // rounds for r in range(rounds + 1)]
    loop = asyncio.new_event_loop()
    sync_db = sqlmem.open(ctx.folder("a1-sync") / "memory.db")
    adb = loop.run_until_complete(sqlmem.aio.open(ctx.folder("a1-async") / "memory.db"))

    async def turns(r: int) -> None:
        for i in range(bounds[r], bounds[r + 1]):
            await adb.history.append("s", messages[i])
            await adb.history.get_recent("s", 50)

    def run_async(r: int) -> int:
        loop.run_until_complete(turns(r))
        return bounds[r + 1] - bounds[r]

    def run_sync(r: int) -> int:
        for i in range(bounds[r], bounds[r + 1]):
            sync_db.history.append("s", messages[i])
            sync_db.history.get_recent("s", 50)
        return bounds[r + 1] - bounds[r]

    try:
        rates = throughput_rounds({"sync": run_sync, "aio": run_async}, rounds)
        storm = loop.run_until_complete(_storm(adb, 1_000))
    finally:
        loop.run_until_complete(adb.aclose())
        loop.close()
        sync_db.close()
    sq, base = median(rates["aio"]), median(rates["sync"])
    turn = Row("A1 aio append + get_recent(50), awaited in turn (vs the same sync calls)",
               "turns/s", sq, base, cost_ratio_rate(sq, base), "report")  # fmt: skip
    tasks = Row("A1 aio 1,000 concurrent tasks appending to one file", "appends/s",
                storm["rate"], float("nan"), None, "no error, no lost write",
                extra=storm)  # fmt: skip
    if storm["errors"] or storm["lost"]:
        tasks.failed_condition = f"{storm['errors']} errors, {storm['lost']} lost writes"
    return [turn, tasks]


async def _storm(adb: sqlmem.aio.AsyncMemoryDB, tasks: int) -> dict[str, float]:
    async def one(i: int) -> None:
        await adb.history.append(f"t{i % 10}", sqlmem.Message(role="user", content=f"m {i}"))

    started = time.perf_counter()
    done = await asyncio.gather(*(one(i) for i in range(tasks)), return_exceptions=True)
    seconds = time.perf_counter() - started
    errors = sum(isinstance(d, BaseException) for d in done)
    stored = 0
    for s in range(10):
        stored += len(await adb.history.get_recent(f"t{s}", tasks))
    return {"tasks": tasks, "errors": errors, "lost": tasks - errors - stored,
            "rate": tasks / seconds}  # fmt: skip
