"""W4 (opening many agent databases) and W6 (mixed threads on one database)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw

import sqlmem
from sqlmem.factory import MemoryFactory
from sqlmem.sqlite.core.migrations import load_migrations

from .context import Context
from .fact_workloads import fact_dbs
from .harness import Row, cost_ratio_rate, median, percentile, throughput_rounds
from .raw import (
    FACTS_SCHEMA,
    HISTORY_FTS,
    HISTORY_SCHEMA,
    SEARCH,
    SEARCH_MESSAGES,
    RawHistory,
    connect,
    match_expr,
)

__all__ = ["w4_open_agents", "w6_mixed"]

# What sqlmem's first migration creates, in raw form: history and facts, both with FTS.
RAW_AGENT_SCHEMA = HISTORY_SCHEMA + HISTORY_FTS + FACTS_SCHEMA + "PRAGMA user_version = 1;"
RAW_APPEND = "INSERT INTO messages(session_id, seq, role, content, created_at) VALUES (?,?,?,?,?)"


def _full_schema() -> str:
    """sqlmem's whole schema as a user who owns it would create it: every migration's
    SQL at once, in one transaction (no ledger). Against this the W4 ratio is sqlmem's own
    cost, told apart from the cost of the schema itself (tables, FTS, triggers)."""
    tokenizer = sqlmem.StoreConfig().tokenizer
    body = "\n".join(m.sql.replace("{tokenizer}", tokenizer) for m in load_migrations())
    return body + f"\nPRAGMA user_version = {len(load_migrations())};"


# The append on sqlmem's own tables: the session row, then the message (one transaction).
RAW_FULL_SESSION = (
    "INSERT INTO sessions(session_id, last_seq, created_at, updated_at) VALUES (?1, 1, ?2, ?2) "
    "ON CONFLICT(session_id) DO UPDATE SET last_seq = last_seq + 1 RETURNING pk, last_seq"
)
RAW_FULL_APPEND = "INSERT INTO messages(session, seq, role, content, created_at) VALUES (?,?,?,?,?)"


def _raw_agent(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = connect(path)
    try:
        if conn.execute("PRAGMA user_version").get == 0:
            with conn:
                conn.execute(RAW_AGENT_SCHEMA)
        conn.execute(RAW_APPEND, ("chat:1", 1, "user", content, time.time_ns() // 1_000_000))
    finally:
        conn.close()


def _raw_full_agent(path: Path, content: str, schema: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = connect(path)
    try:
        if conn.execute("PRAGMA user_version").get == 0:
            with conn:
                conn.execute(schema)
        now = time.time_ns() // 1_000_000
        with conn:
            pk, seq = conn.execute(RAW_FULL_SESSION, ("chat:1", now)).get
            conn.execute(RAW_FULL_APPEND, (pk, seq, "user", content, now))
    finally:
        conn.close()


def w4_open_agents(ctx: Context) -> list[Row]:
    """Per agent: create the folder and file, migrate, append one message, close."""
    agents = ctx.sizes.w4_agents
    rounds = max(2, min(10, agents // 20))
    bounds = [agents * r // rounds for r in range(rounds + 1)]
    text = ctx.corpus.session_messages(1, seed=71)[0]
    message = sqlmem.Message(role="user", content=text)
    base = ctx.folder("w4")

    full_schema = _full_schema()

    def raw(r: int) -> int:
        for i in range(bounds[r], bounds[r + 1]):
            _raw_agent(base / "raw" / f"agent-{i}" / "memory.db", text)
        return bounds[r + 1] - bounds[r]

    def raw_full(r: int) -> int:
        for i in range(bounds[r], bounds[r + 1]):
            _raw_full_agent(base / "raw-full" / f"agent-{i}" / "memory.db", text, full_schema)
        return bounds[r + 1] - bounds[r]

    def direct(r: int) -> int:
        for i in range(bounds[r], bounds[r + 1]):
            with sqlmem.open(base / "sqlmem" / f"agent-{i}" / "memory.db") as db:
                db.history.append("chat:1", message)
        return bounds[r + 1] - bounds[r]

    def factory(r: int) -> int:
        with MemoryFactory(base / "factory") as memory:
            for i in range(bounds[r], bounds[r + 1]):
                history = memory.resolve_history(f"agent-{i}")
                assert history is not None
                history.append("chat:1", message)
        return bounds[r + 1] - bounds[r]

    variants = {"raw": raw, "raw_full": raw_full, "sqlmem": direct, "factory": factory}
    rates = throughput_rounds(variants, rounds)
    ms = {name: 1000 / median(r) for name, r in rates.items()}
    return [
        Row("W4 open agent db (create, migrate, append 1, close)", "ms/agent", ms["sqlmem"],
            ms["raw"], ms["sqlmem"] / ms["raw"], "<= 1.5x raw", 1.5),
        Row("W4 same, raw creating sqlmem's whole schema in one transaction", "ms/agent",
            ms["sqlmem"], ms["raw_full"], ms["sqlmem"] / ms["raw_full"], "<= 1.5x raw", 1.5),
        Row("W4 same through MemoryFactory (lazy resolve, close at end)", "ms/agent",
            ms["factory"], ms["raw"], ms["factory"] / ms["raw"]),
    ]  # fmt: skip


# -- W6 -------------------------------------------------------------------------------------


class _Side:
    """One side of W6: how to append and search, and per-thread setup."""

    def __init__(
        self,
        append: Callable[[int, int], Any],
        search: Callable[[int, str], Any],
        count: Callable[[], int],
        close: Callable[[], None] = lambda: None,
    ) -> None:
        self.append, self.search, self.count, self.close = append, search, count, close


def _raw_side(ctx: Context, path: Path, facts_path: Path, texts: list[str]) -> _Side:
    """One connection per thread (apsw releases the GIL inside SQLite), busy timeout 5 s."""
    local = threading.local()
    opened: list[Any] = []
    lock = threading.Lock()

    def conns() -> tuple[RawHistory, apsw.Connection]:
        if not hasattr(local, "history"):
            local.history = RawHistory(path, fts=True)
            local.facts = connect(facts_path)
            with lock:
                opened.extend((local.history.conn, local.facts))
        return local.history, local.facts

    def append(thread: int, i: int) -> Any:
        history, _ = conns()
        now = time.time_ns() // 1_000_000
        return history.append(f"w6:{thread}", "user", texts[i % len(texts)], now)

    def search(i: int, q: str) -> Any:
        history, facts = conns()
        expr = match_expr(q, "OR")
        if expr is None:
            return []
        if i % 2:
            return history.conn.execute(SEARCH_MESSAGES, (expr, 10)).fetchall()
        return facts.execute(SEARCH, (expr, 10)).fetchall()

    counter = RawHistory(path, fts=True)

    def close() -> None:
        for conn in opened:
            conn.close()
        counter.close()

    return _Side(append, search, counter.count, close)


def w6_mixed(ctx: Context) -> list[Row]:
    """4 appending and 4 searching threads on one database; counts every write."""
    s = ctx.sizes
    texts = ctx.corpus.session_messages(2_000, seed=81)
    queries = [q for q, _ in ctx.corpus.queries(500, seed=82)]
    raw_facts, db = fact_dbs(ctx, s.w6_facts, "w6-facts")
    # Messages go into the same file as the facts on both sides.
    raw_side = _raw_side(ctx, Path(raw_facts.conn.filename), Path(raw_facts.conn.filename), texts)
    messages = [sqlmem.Message(role="user", content=t) for t in texts]

    def sq_search(i: int, q: str) -> Any:
        if i % 2:
            return db.history.search(q, top_k=10)
        return db.facts.search(q, 10)

    def sq_count() -> int:
        return sum(db.history.count(f"w6:{t}") for t in range(4))

    sides = {
        "raw": raw_side,
        "sqlmem": _Side(lambda t, i: db.history.append(f"w6:{t}", messages[i % len(messages)]),
                        sq_search, sq_count),
    }  # fmt: skip
    stats: dict[str, dict[str, Any]] = {
        name: {"appends": 0, "searches": 0, "errors": [], "append_us": [], "search_us": [],
               "seconds": 0.0}
        for name in sides
    }  # fmt: skip
    before = {"raw": raw_side.count(), "sqlmem": sq_count()}

    def run(name: str, r: int) -> int:
        _mixed_round(sides[name], stats[name], s.w6_seconds / 2, queries, r)
        return 1

    throughput_rounds({n: (lambda r, n=n: run(n, r)) for n in sides}, 2)
    rows = []
    out = {}
    for name, st in stats.items():
        stored = sides[name].count() - before[name]
        st["lost_writes"] = st["appends"] - stored
        out[name] = (st["appends"] + st["searches"]) / st["seconds"]
    raw_side.close()
    sq, rw = stats["sqlmem"], stats["raw"]
    detail = {
        name: {
            "appends": st["appends"], "searches": st["searches"], "errors": len(st["errors"]),
            "first_errors": st["errors"][:3], "lost_writes": st["lost_writes"],
            "append_p99_us": percentile(st["append_us"], 99),
            "search_p99_us": percentile(st["search_us"], 99),
        }
        for name, st in stats.items()
    }  # fmt: skip
    total = Row(f"W6 mixed 4 append + 4 search threads, {s.w6_seconds:g} s per side", "ops/s",
                out["sqlmem"], out["raw"], cost_ratio_rate(out["sqlmem"], out["raw"]),
                "report; no error, no lost write", None, extra=detail)  # fmt: skip
    problems = [
        f"{n}: {d['errors']} errors, {d['lost_writes']} lost writes"
        for n, d in detail.items()
        if d["errors"] or d["lost_writes"]
    ]
    if problems:
        total.failed_condition = "; ".join(problems)
    rows.append(total)
    for kind in ("append", "search"):
        a = percentile(sq[f"{kind}_us"], 99)
        b = percentile(rw[f"{kind}_us"], 99)
        rows.append(Row(f"W6 {kind} latency under load", "p99 µs", a, b, a / b))
    return rows


def _mixed_round(
    side: _Side, st: dict[str, Any], seconds: float, queries: list[str], r: int
) -> None:
    stop = time.monotonic() + seconds
    lock = threading.Lock()

    def appender(t: int) -> None:
        done, lat = 0, []
        try:
            while time.monotonic() < stop:
                start = time.perf_counter_ns()
                side.append(t, done + t * 7919)
                lat.append((time.perf_counter_ns() - start) / 1000)
                done += 1
        except Exception as exc:  # counted, reported, and the thread stops
            with lock:
                st["errors"].append(repr(exc))
        with lock:
            st["appends"] += done
            st["append_us"] += lat

    def searcher(t: int) -> None:
        done, lat = 0, []
        try:
            while time.monotonic() < stop:
                q = queries[(done * 4 + t + r * 13) % len(queries)]
                start = time.perf_counter_ns()
                side.search(done + t, q)
                lat.append((time.perf_counter_ns() - start) / 1000)
                done += 1
        except Exception as exc:
            with lock:
                st["errors"].append(repr(exc))
        with lock:
            st["searches"] += done
            st["search_us"] += lat

    threads = [threading.Thread(target=appender, args=(t,)) for t in range(4)]
    threads += [threading.Thread(target=searcher, args=(t,)) for t in range(4)]
    began = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    st["seconds"] += time.monotonic() - began
