"""sqlmem beside the libraries users would pick instead (issue 22), in the same run.

Each peer stores the same generated data in its own file, used the way its documentation
shows (its fastest documented call, file-backed, WAL where it sets WAL itself). A peer
that is not installed is left out of its row; a row with no peer left is skipped
(`pip install -e '.[benchmarks]'` installs them all).

- P1 append one message: sqlmem `history.append` (search on) vs raw apsw with the same
  FTS5 triggers; peers: openai-agents `SQLiteSession.add_items([item])` (its async API, in
  one event loop) and sqlite-utils `table.insert` into a table with FTS triggers.
- P2 get_recent(50) on one session: vs raw apsw reading the same fields; peers:
  sqlite-utils `rows_where(..., order_by="seq desc", limit=50)` and
  `SQLiteSession.get_items(50)`. Target (issue 22): faster than sqlite-utils, <= 2x raw.
- P3 fact search, mode "all", top 10: vs raw apsw AND; peer: sqlite-utils
  `table.search(q, limit=10, quote=True)` (FTS5, porter, ranked by bm25 like sqlmem).

The adapters against the frameworks' own backends (P4-P6) are in `peer_adapters.py`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Callable
from typing import Any

import sqlmem

from .context import Context
from .fact_workloads import fact_dbs
from .harness import (
    Row,
    Skip,
    cost_ratio_rate,
    latency_interleaved,
    median,
    percentile,
    throughput_rounds,
    with_peers,
)
from .raw import RawHistory

__all__ = ["p1_append", "p2_recent", "p3_fact_search"]

NAN = float("nan")


def _now() -> int:
    return time.time_ns() // 1_000_000


def _have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _need_any(*modules: str) -> None:
    if not any(_have(m) for m in modules):
        raise Skip(f"no peer installed ({', '.join(modules)}): pip install -e '.[benchmarks]'")


def _item(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "content": content}


def _sqlite_utils_messages(path: str, fts: bool) -> Any:
    import sqlite_utils

    db = sqlite_utils.Database(path)
    db.enable_wal()
    table = db["messages"]
    table.create({"id": int, "session_id": str, "seq": int, "role": str, "content": str,
                  "created_at": int}, pk="id")  # fmt: skip
    table.create_index(["session_id", "seq"], unique=True)
    if fts:
        table.enable_fts(["content"], tokenize="porter", create_triggers=True)
    return db


def p1_append(ctx: Context) -> list[Row]:
    _need_any("agents", "sqlite_utils")
    n = max(ctx.sizes.w1_messages // 10, 40)
    rounds = ctx.sizes.w1_rounds
    rows = ctx.corpus.messages(n, 10, seed=61)
    messages = [sqlmem.Message(role=r.role, content=r.content) for r in rows]  # type: ignore[arg-type]
    bounds = [n * r // rounds for r in range(rounds + 1)]
    raw = RawHistory(ctx.folder("p1-raw") / "raw.db", fts=True)
    db = sqlmem.open(ctx.folder("p1-sqlmem") / "memory.db")
    closers: list[Callable[[], Any]] = [raw.close, db.close]
    loop = asyncio.new_event_loop()
    closers.append(loop.close)

    def span(r: int) -> range:
        return range(bounds[r], bounds[r + 1])

    def run_raw(r: int) -> int:
        for i in span(r):
            raw.append(f"s{rows[i].session}", rows[i].role, rows[i].content, _now())
        return len(span(r))

    def run_sqlmem(r: int) -> int:
        for i in span(r):
            db.history.append(f"s{rows[i].session}", messages[i])
        return len(span(r))

    variants: dict[str, Callable[[int], int]] = {"raw": run_raw, "sqlmem": run_sqlmem}
    if _have("agents"):
        from agents import SQLiteSession

        sessions = {s: SQLiteSession(f"s{s}", ctx.folder("p1-agents") / "a.db") for s in range(10)}
        closers += [s.close for s in sessions.values()]

        async def add(r: int) -> None:
            for i in span(r):
                await sessions[rows[i].session].add_items([_item(rows[i].role, rows[i].content)])

        def run_agents(r: int) -> int:
            loop.run_until_complete(add(r))
            return len(span(r))

        variants["agents.SQLiteSession"] = run_agents
    if _have("sqlite_utils"):
        su = _sqlite_utils_messages(str(ctx.folder("p1-sqlite-utils") / "su.db"), fts=True)
        table, seqs = su["messages"], dict.fromkeys(range(10), 0)
        closers.append(su.close)

        def run_su(r: int) -> int:
            for i in span(r):
                s = rows[i].session
                seqs[s] += 1
                table.insert({"session_id": f"s{s}", "seq": seqs[s], "role": rows[i].role,
                              "content": rows[i].content, "created_at": _now()})  # fmt: skip
            return len(span(r))

        variants["sqlite-utils"] = run_su
    try:
        rates = throughput_rounds(variants, rounds)
    finally:
        for close in closers:
            close()
    sq, rw = median(rates["sqlmem"]), median(rates["raw"])
    row = Row("P1 append one message, history search on (vs raw + FTS triggers)", "msgs/s",
              sq, rw, cost_ratio_rate(sq, rw), "report; peers for scale")  # fmt: skip
    peers = {k: median(v) for k, v in rates.items() if k not in {"raw", "sqlmem"}}
    return [with_peers(row, peers, rate=True, limit=None)]


def p2_recent(ctx: Context) -> list[Row]:
    _need_any("agents", "sqlite_utils")
    n = ctx.sizes.w2_session_messages
    rows = ctx.corpus.messages(n, 1, seed=62)
    raw = RawHistory(ctx.folder("p2-raw") / "raw.db", fts=True)
    db = sqlmem.open(ctx.folder("p2-sqlmem") / "memory.db")
    for start in range(0, n, 1_000):  # SQLite allows 32,766 bound values per statement
        chunk = rows[start : start + 1_000]
        raw.append_many("big", [(r.role, r.content) for r in chunk], _now())
        db.history.append_many("big", [sqlmem.Message(role=r.role, content=r.content)  # type: ignore[arg-type]
                                       for r in chunk])  # fmt: skip
    closers: list[Callable[[], Any]] = [raw.close, db.close]
    variants: dict[str, Callable[[Any], Any]] = {
        "raw": lambda _: raw.get_recent("big", 50),
        "sqlmem": lambda _: db.history.get_recent("big", 50),
    }
    loop = asyncio.new_event_loop()
    closers.append(loop.close)
    if _have("sqlite_utils"):
        su = _sqlite_utils_messages(str(ctx.folder("p2-sqlite-utils") / "su.db"), fts=True)
        su["messages"].insert_all(
            {"session_id": "big", "seq": i + 1, "role": r.role, "content": r.content,
             "created_at": _now()} for i, r in enumerate(rows)
        )  # fmt: skip
        table = su["messages"]
        closers.append(su.close)
        variants["sqlite-utils"] = lambda _: list(
            table.rows_where("session_id = ?", ["big"], order_by="seq desc", limit=50)
        )
    if _have("agents"):
        from agents import SQLiteSession

        session = SQLiteSession("big", ctx.folder("p2-agents") / "a.db")
        loop.run_until_complete(session.add_items([_item(r.role, r.content) for r in rows]))
        closers.append(session.close)
        variants["agents.SQLiteSession"] = lambda _: loop.run_until_complete(session.get_items(50))
    calls = list(range(ctx.sizes.w2_calls))
    latency_interleaved(variants, calls[:20])  # warm every side's page cache
    try:
        samples = latency_interleaved(variants, calls)
    finally:
        for close in closers:
            close()
    p50 = {k: percentile(v, 50) for k, v in samples.items()}
    row = Row(f"P2 get_recent(50), {n:,}-message session (vs raw, same fields)", "p50 µs",
              p50["sqlmem"], p50["raw"], p50["sqlmem"] / p50["raw"],
              "p50 <= 2x raw; faster than sqlite-utils (issue 22)", 2.0)  # fmt: skip
    peers = {k: v for k, v in p50.items() if k not in {"raw", "sqlmem"}}
    with_peers(row, peers, rate=False, limit=None)
    if "sqlite-utils" in p50:  # the target names sqlite-utils, not the best peer
        row.extra["vs_sqlite_utils"] = p50["sqlmem"] / p50["sqlite-utils"]
        if p50["sqlmem"] > p50["sqlite-utils"]:
            row.failed_condition = f"slower than sqlite-utils ({p50['sqlite-utils']:.0f} µs)"
    return [row]


def p3_fact_search(ctx: Context) -> list[Row]:
    _need_any("sqlite_utils")
    import sqlite_utils

    count = ctx.sizes.w3_facts
    raw, db = fact_dbs(ctx, count, "facts")
    assert ctx.cache is not None
    if "p3-sqlite-utils" not in ctx.cache:  # built once, like W3's databases
        su = sqlite_utils.Database(str(ctx.folder("p3-sqlite-utils") / "su.db"))
        su.enable_wal()
        facts = ctx.corpus.facts(count, seed=31)  # the same facts as W3's databases
        su["facts"].insert_all(
            ({"id": f.id, "content": f.content, "tag": f.tag, "category": f.category}
             for f in facts),
            pk="id", batch_size=1_000,
        )  # fmt: skip
        su["facts"].enable_fts(["content"], tokenize="porter", create_triggers=True)
        ctx.settle()
        ctx.cache["p3-sqlite-utils"] = (su,)
    (su,) = ctx.cache["p3-sqlite-utils"]
    table = su["facts"]
    queries = [q for q, _ in ctx.corpus.queries(ctx.sizes.w3_queries, seed=63)]
    variants: dict[str, Callable[[Any], Any]] = {
        "raw": lambda q: raw.search(q, 10, "AND"),
        "sqlmem": lambda q: db.facts.search(q, 10, mode="all"),
        "sqlite-utils": lambda q: list(table.search(q, limit=10, quote=True)),
    }
    ctx.warm(ctx.sizes.w3_queries, 64, list(variants.values()))
    samples = latency_interleaved(variants, queries)
    p50 = {k: percentile(v, 50) for k, v in samples.items()}
    row = Row(f"P3 fact search 'all' top-10, {count:,} facts (vs raw AND)", "p50 µs",
              p50["sqlmem"], p50["raw"], p50["sqlmem"] / p50["raw"],
              "report; peer for scale")  # fmt: skip
    return [with_peers(row, {"sqlite-utils": p50["sqlite-utils"]}, rate=False, limit=None)]
