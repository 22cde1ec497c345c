"""The adapters beside the frameworks' own SQLite backends (issue 20), in the same run.

Target: at least as fast on every row ("vs peer" <= 1.0). Each side gets its own file;
the peers are used as their documentation shows (WAL set on their connection). The raw
column is empty: the physical limit of the same calls is what P1-P3 (`peers.py`) report.

- P4 `SqlmemSession` vs `agents.SQLiteSession`: `add_items([item])` and `get_items(50)`,
  both through their async API in one event loop.
- P5 `SqlmemStore` vs LangGraph's `SqliteStore`: put, get, and search with a filter and no
  query (SqliteStore has no text ranking without an embedding index; sqlmem's BM25 has no
  counterpart there to compare with).
- P6 `SqlmemSaver` vs `SqliteSaver`: put a checkpoint, get_tuple the latest.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import Callable
from typing import Any

from .context import Context
from .harness import (
    Row,
    Skip,
    latency_interleaved,
    median,
    percentile,
    throughput_rounds,
    with_peers,
)
from .peers import _have, _item

__all__ = ["p4_session", "p5_store", "p6_saver"]

NAN = float("nan")


def _peer_row(name: str, metric: str, mine: float, peer: str, theirs: float, rate: bool) -> Row:
    row = Row(name, metric, mine, NAN, None, "at least as fast as the framework's backend")
    return with_peers(row, {peer: theirs}, rate=rate, limit=1.0)


def p4_session(ctx: Context) -> list[Row]:
    if not _have("agents"):
        raise Skip("openai-agents is not installed")
    from agents import SQLiteSession

    from sqlmem.adapters.openai_agents import SqlmemSession

    n = max(ctx.sizes.w1_messages // 10, 40)
    rows = ctx.corpus.messages(n, 1, seed=65)
    items = [_item(r.role, r.content) for r in rows]
    mine = SqlmemSession("s", ctx.folder("p4-sqlmem") / "memory.db")
    theirs = SQLiteSession("s", ctx.folder("p4-agents") / "a.db")
    sessions = {"sqlmem": mine, "agents.SQLiteSession": theirs}
    loop = asyncio.new_event_loop()
    rounds = ctx.sizes.w1_rounds
    bounds = [n * r // rounds for r in range(rounds + 1)]

    def adder(session: Any) -> Callable[[int], int]:
        async def add(r: int) -> None:
            for i in range(bounds[r], bounds[r + 1]):
                await session.add_items([items[i]])

        def run(r: int) -> int:
            loop.run_until_complete(add(r))
            return bounds[r + 1] - bounds[r]

        return run

    try:
        rates = throughput_rounds({k: adder(s) for k, s in sessions.items()}, rounds)
        calls = list(range(ctx.sizes.w2_calls))
        reads = {k: (lambda _, s=s: loop.run_until_complete(s.get_items(50)))
                 for k, s in sessions.items()}  # fmt: skip
        samples = latency_interleaved(reads, calls)
    finally:
        mine.close()
        theirs.close()
        loop.close()
    peer = "agents.SQLiteSession"
    return [
        _peer_row("P4 SqlmemSession.add_items([item])", "items/s", median(rates["sqlmem"]),
                  peer, median(rates[peer]), True),
        _peer_row(f"P4 SqlmemSession.get_items(50), {n:,} items", "p50 µs",
                  percentile(samples["sqlmem"], 50), peer, percentile(samples[peer], 50), False),
    ]  # fmt: skip


def p5_store(ctx: Context) -> list[Row]:
    if not _have("langgraph.store.sqlite"):
        raise Skip("langgraph-checkpoint-sqlite is not installed")
    from langgraph.store.sqlite import SqliteStore

    from sqlmem.adapters.langgraph import SqlmemStore

    conn = sqlite3.connect(str(ctx.folder("p5-peer") / "s.db"), check_same_thread=False,
                           isolation_level=None)  # fmt: skip
    conn.execute("PRAGMA journal_mode=WAL")
    theirs = SqliteStore(conn)
    theirs.setup()
    mine = SqlmemStore(ctx.folder("p5-sqlmem") / "memory.db")
    stores = {"sqlmem": mine, "SqliteStore": theirs}
    n = max(ctx.sizes.w3c_single, 30)
    texts = [f.content for f in ctx.corpus.facts(n, seed=66)]
    ns = ("users", "u1", "memories")
    rounds = ctx.sizes.w1_rounds
    bounds = [n * r // rounds for r in range(rounds + 1)]

    def putter(store: Any) -> Callable[[int], int]:
        def run(r: int) -> int:
            for i in range(bounds[r], bounds[r + 1]):
                store.put(ns, f"k{i}", {"text": texts[i], "kind": i % 50})
            return bounds[r + 1] - bounds[r]

        return run

    try:
        rates = throughput_rounds({k: putter(s) for k, s in stores.items()}, rounds)
        keys = [f"k{(i * 7919) % n}" for i in range(ctx.sizes.w2_calls)]
        gets = latency_interleaved({k: (lambda key, s=s: s.get(ns, key))
                                    for k, s in stores.items()}, keys)  # fmt: skip
        kinds = [i % 50 for i in range(ctx.sizes.w3b_queries)]
        finds = latency_interleaved(
            {k: (lambda kind, s=s: s.search(ns, filter={"kind": kind}, limit=10))
             for k, s in stores.items()}, kinds,
        )  # fmt: skip
    finally:
        mine.close()
        conn.close()
    p = "SqliteStore"
    return [
        _peer_row("P5 SqlmemStore.put", "puts/s", median(rates["sqlmem"]), p,
                  median(rates[p]), True),
        _peer_row("P5 SqlmemStore.get", "p50 µs", percentile(gets["sqlmem"], 50), p,
                  percentile(gets[p], 50), False),
        _peer_row(f"P5 SqlmemStore.search(filter, no query), {n:,} items, 2% match",
                  "p50 µs", percentile(finds["sqlmem"], 50), p, percentile(finds[p], 50), False),
    ]  # fmt: skip


def _checkpoint(saver: Any, step: int, prev: str | None, texts: list[str]) -> tuple[Any, str]:
    from langgraph.checkpoint.base import empty_checkpoint

    version = saver.get_next_version(prev, None)
    cp = empty_checkpoint()
    cp["id"] = str(uuid.UUID(int=(1 << 100) + step))  # increasing ids, as uuid6 gives
    cp["channel_values"] = {"messages": texts[: 1 + step % 20], "step": step}
    cp["channel_versions"] = {"messages": version, "step": version}
    return cp, version


def p6_saver(ctx: Context) -> list[Row]:
    if not _have("langgraph.checkpoint.sqlite"):
        raise Skip("langgraph-checkpoint-sqlite is not installed")
    from langgraph.checkpoint.sqlite import SqliteSaver

    from sqlmem.adapters.langgraph_saver import SqlmemSaver

    conn = sqlite3.connect(str(ctx.folder("p6-peer") / "c.db"), check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    theirs = SqliteSaver(conn)
    theirs.setup()
    mine = SqlmemSaver(ctx.folder("p6-sqlmem") / "memory.db")
    savers = {"sqlmem": mine, "SqliteSaver": theirs}
    texts = [f.content for f in ctx.corpus.facts(20, seed=67)]
    n = max(ctx.sizes.w3c_single // 2, 20)
    rounds = ctx.sizes.w1_rounds
    bounds = [n * r // rounds for r in range(rounds + 1)]
    state: dict[str, str | None] = dict.fromkeys(savers)
    config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}

    def putter(name: str) -> Callable[[int], int]:
        saver = savers[name]

        def run(r: int) -> int:
            for step in range(bounds[r], bounds[r + 1]):
                cp, state[name] = _checkpoint(saver, step, state[name], texts)
                saver.put(config, cp, {"step": step, "source": "loop"},
                          {"messages": state[name], "step": state[name]})  # fmt: skip
            return bounds[r + 1] - bounds[r]

        return run

    try:
        rates = throughput_rounds({k: putter(k) for k in savers}, rounds)
        calls = list(range(ctx.sizes.w2_calls))
        gets = latency_interleaved({k: (lambda _, s=s: s.get_tuple(config))
                                    for k, s in savers.items()}, calls)  # fmt: skip
    finally:
        mine.close()
        conn.close()
    p = "SqliteSaver"
    return [
        _peer_row("P6 SqlmemSaver.put", "checkpoints/s", median(rates["sqlmem"]), p,
                  median(rates[p]), True),
        _peer_row(f"P6 SqlmemSaver.get_tuple (latest of {n:,})", "p50 µs",
                  percentile(gets["sqlmem"], 50), p, percentile(gets[p], 50), False),
    ]  # fmt: skip
