"""W1 (append), W1b (append_many), W2 (get_recent), W5 (history search).

Messages are built as `sqlmem.Message` objects before timing starts (building a record
is the caller's cost); the raw side gets the same (role, content) pairs. `created_at`
is left to the store ("now"), and raw computes "now" per call too.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import sqlmem

from .any_mode import agreement
from .context import Context
from .harness import (
    Row,
    cost_ratio_rate,
    latency_interleaved,
    median,
    percentile,
    throughput_rounds,
)
from .raw import RawHistory, sqlite_utils_recent

__all__ = ["w1_append", "w1b_append_many", "w2_get_recent", "w5_history_search"]


def _now() -> int:
    return time.time_ns() // 1_000_000


def _open(ctx: Context, name: str, *, search: bool) -> sqlmem.MemoryDB:
    return sqlmem.open(ctx.folder(name) / "memory.db", sqlmem.StoreConfig(history_search=search))


def _append_variants(ctx: Context, tag: str, batch: int) -> dict[str, list[float]]:
    s = ctx.sizes
    rows = ctx.corpus.messages(s.w1_messages, s.w1_sessions, seed=11)
    messages = [sqlmem.Message(role=r.role, content=r.content) for r in rows]  # type: ignore[arg-type]
    sessions = [f"chat:{r.session}" for r in rows]
    raw_plain = RawHistory(ctx.folder(f"{tag}-raw") / "raw.db", fts=False)
    raw_fts = RawHistory(ctx.folder(f"{tag}-raw-fts") / "raw.db", fts=True)
    off = _open(ctx, f"{tag}-sqlmem-off", search=False)
    on = _open(ctx, f"{tag}-sqlmem-on", search=True)
    bounds = [s.w1_messages * r // s.w1_rounds for r in range(s.w1_rounds + 1)]

    if batch == 1:

        def raw_runner(raw: RawHistory):
            def run(r: int) -> int:
                for i in range(bounds[r], bounds[r + 1]):
                    raw.append(sessions[i], rows[i].role, rows[i].content, _now())
                return bounds[r + 1] - bounds[r]

            return run

        def sqlmem_runner(db: sqlmem.MemoryDB):
            append = db.history.append

            def run(r: int) -> int:
                for i in range(bounds[r], bounds[r + 1]):
                    append(sessions[i], messages[i])
                return bounds[r + 1] - bounds[r]

            return run

    else:
        # Batches of `batch` consecutive messages go to one session, sessions in turn.
        def batches(r: int):
            for start in range(bounds[r], bounds[r + 1], batch):
                end = min(start + batch, bounds[r + 1])
                yield f"chat:{(start // batch) % s.w1_sessions}", start, end

        def raw_runner(raw: RawHistory):
            pairs = [(m.role, m.content) for m in rows]

            def run(r: int) -> int:
                for session, start, end in batches(r):
                    raw.append_many(session, pairs[start:end], _now())
                return bounds[r + 1] - bounds[r]

            return run

        def sqlmem_runner(db: sqlmem.MemoryDB):
            append_many = db.history.append_many

            def run(r: int) -> int:
                for session, start, end in batches(r):
                    append_many(session, messages[start:end])
                return bounds[r + 1] - bounds[r]

            return run

    try:
        return throughput_rounds(
            {
                "raw": raw_runner(raw_plain),
                "raw_fts": raw_runner(raw_fts),
                "sqlmem_off": sqlmem_runner(off),
                "sqlmem_on": sqlmem_runner(on),
            },
            s.w1_rounds,
        )
    finally:
        for closer in (raw_plain.close, raw_fts.close, off.close, on.close):
            closer()


def _rate_row(
    workload: str, rates: dict[str, list[float]], mine: str, base: str, target: str,
    limit: float | None,
) -> Row:  # fmt: skip
    sq, raw = median(rates[mine]), median(rates[base])
    return Row(workload, "msgs/s", sq, raw, cost_ratio_rate(sq, raw), target, limit)


def w1_append(ctx: Context) -> list[Row]:
    """One message per call, autocommit: durability (a commit per message) dominates."""
    rates = _append_variants(ctx, "w1", batch=1)
    return [
        _rate_row("W1 append, history_search off", rates, "sqlmem_off", "raw",
                  "<= 1.5x raw plain insert", 1.5),
        _rate_row("W1 append, history_search on", rates, "sqlmem_on", "raw",
                  "<= 3x raw plain insert", 3.0),
        _rate_row("W1 append, history_search on (vs raw + FTS triggers)", rates, "sqlmem_on",
                  "raw_fts", "report", None),
    ]  # fmt: skip


def w1b_append_many(ctx: Context) -> list[Row]:
    rates = _append_variants(ctx, "w1b", batch=20)
    return [
        _rate_row("W1b append_many(20), history_search on (vs raw + FTS triggers)", rates,
                  "sqlmem_on", "raw_fts", "<= 1.5x raw", 1.5),
        _rate_row("W1b append_many(20), history_search off (vs raw plain)", rates,
                  "sqlmem_off", "raw", "<= 1.5x raw", 1.5),
    ]  # fmt: skip


# -- the shared history database (W2, W5) ---------------------------------------------------

BIG_SESSION = "chat:big"


def _history_dbs(ctx: Context) -> tuple[RawHistory, sqlmem.MemoryDB]:
    """Both sides hold the same messages: one big session interleaved with 99 others."""
    assert ctx.cache is not None
    if "history" in ctx.cache:
        return ctx.cache["history"]  # type: ignore[no-any-return]
    s = ctx.sizes
    total, big = s.history_messages, s.w2_session_messages
    ctx.log(f"building the history databases ({total:,} messages) ...")
    rows = ctx.corpus.messages(total, 1, seed=21)
    every = max(1, total // big)

    def session_of(i: int) -> str:
        return BIG_SESSION if i % every == 0 and i // every < big else f"chat:{i % 99}"

    raw = RawHistory(ctx.folder("history-raw") / "raw.db", fts=True)
    db = _open(ctx, "history-sqlmem", search=True)
    chunk = 1_000
    for start in range(0, total, chunk):
        groups: dict[str, list[int]] = {}
        for i in range(start, min(start + chunk, total)):
            groups.setdefault(session_of(i), []).append(i)
        for session, idx in groups.items():
            now = _now()
            raw.append_many(session, [(rows[i].role, rows[i].content) for i in idx], now)
            db.history.append_many(
                session,
                [sqlmem.Message(role=rows[i].role, content=rows[i].content) for i in idx],  # type: ignore[arg-type]
            )
    raw.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.checkpoint()
    ctx.settle()
    ctx.log("history databases built")
    ctx.cache["history"] = (raw, db)
    return raw, db


def w2_get_recent(ctx: Context) -> list[Row]:
    """The read an agent makes every turn, against raw apsw returning the same fields and,
    when installed, sqlite-utils' `rows_where` returning the same rows (issue 22: faster
    than it, <= 2x raw). The peer reads raw's file (the same messages, its own connection)."""
    raw, db = _history_dbs(ctx)
    calls = list(range(ctx.sizes.w2_calls))
    mine, theirs = db.history.get_recent(BIG_SESSION, 50), raw.get_recent(BIG_SESSION, 50)
    assert [m.seq for m in mine] == [r[0] for r in theirs], "windows differ"
    variants = {
        "raw": lambda _: raw.get_recent(BIG_SESSION, 50),
        "sqlmem": lambda _: db.history.get_recent(BIG_SESSION, 50),
    }
    peer = sqlite_utils_recent(Path(raw.conn.filename))
    if peer is not None:
        assert [r["seq"] for r in peer(BIG_SESSION, 50)] == [r[0] for r in theirs], "peer differs"
        variants["sqlite_utils"] = lambda _: peer(BIG_SESSION, 50)
    # No `collect`: keeping every result alive (thousands of 50-message lists) would time
    # the garbage collector's walks over them, which a caller that drops its result never pays.
    samples = latency_interleaved(variants, calls)
    name = "W2 get_recent(50), 10k-message session"
    rows = _latency_rows(name, samples, "raw", "sqlmem", "p50 <= 2x raw", 2.0)
    if peer is not None:
        rows += _latency_rows(f"{name} (vs sqlite-utils rows_where)", samples, "sqlite_utils",
                              "sqlmem", "p50 < sqlite-utils", 1.0)  # fmt: skip
    return rows


def w5_history_search(ctx: Context) -> list[Row]:
    raw, db = _history_dbs(ctx)
    queries = [q for q, _ in ctx.corpus.queries(ctx.sizes.w5_queries, seed=51)]
    ctx.warm(3 * ctx.sizes.w5_queries, 53, [
        lambda q: db.history.search(q, top_k=10),
        lambda q: raw.search(q, 10, "AND"), lambda q: raw.search(q, 10, "OR"),
    ])  # fmt: skip
    got: dict[str, list[Any]] = {}
    samples = latency_interleaved(
        {
            "raw_or": lambda q: [(r[0], r[1]) for r in raw.search(q, 10, "OR")],
            "raw_and": lambda q: raw.search(q, 10, "AND"),
            "sqlmem": lambda q: [(m.session_id, m.seq) for m in db.history.search(q, top_k=10)],
        },
        queries,
        collect=got,
    )
    n = ctx.sizes.history_messages
    rows = [
        *_latency_rows(f"W5 history search over {n:,} messages (vs raw OR)", samples, "raw_or",
                       "sqlmem", "report", None),
        *_latency_rows("W5 history search (vs raw AND, for scale)", samples, "raw_and",
                       "sqlmem", "report", None, p99=False),
    ]  # fmt: skip
    # Top-10 agreement with the exact OR ranking (as W3 "any"): the share of raw OR's
    # top 10 messages that sqlmem's top 10 holds, averaged over the queries.
    exact = got["raw_or"]
    rows[0].extra["agreement"] = sum(
        agreement(mine, ref) for mine, ref in zip(got["sqlmem"], exact, strict=True)
    ) / len(exact)
    return rows


def _latency_rows(
    workload: str, samples: dict[str, list[float]], base: str, mine: str, target: str,
    limit: float | None, *, p99: bool = True,
) -> list[Row]:  # fmt: skip
    sq50, raw50 = percentile(samples[mine], 50), percentile(samples[base], 50)
    rows = [Row(workload, "p50 µs", sq50, raw50, sq50 / raw50, target, limit)]
    if p99:
        sq99, raw99 = percentile(samples[mine], 99), percentile(samples[base], 99)
        rows.append(Row(workload, "p99 µs", sq99, raw99, sq99 / raw99))
    return rows


latency_rows = _latency_rows
