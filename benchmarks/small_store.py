"""W3s: the fixed cost of one call at the size most agents' memories have.

At 100,000 facts the SQL dominates a search and sqlmem's line meets raw's; at 10,000 facts
and in a short session what sqlmem adds per call (checking arguments, its statements,
building records) is most of the time. So: fact search "all" and "any" over 10,000 facts
(a tenth of W3's store, the same kind of facts and queries) and `get_recent(20)` of a
200-message session, each beside raw apsw doing the same work on its own file; the rows
report sqlmem's p50 with raw's, and the difference, in µs, is the fixed cost per call.
"""

from __future__ import annotations

import time
from typing import Any

import sqlmem

from .context import Context
from .fact_workloads import _fact, _raw_row
from .harness import Row, latency_interleaved
from .history_workloads import latency_rows
from .raw import RawFacts, RawHistory

__all__ = ["w3s_small_store"]

SESSION = "short"
SESSION_MESSAGES = 200
WINDOW = 20


def _stores(ctx: Context, facts: int) -> tuple[RawFacts, RawHistory, sqlmem.MemoryDB]:
    rows = ctx.corpus.facts(facts, seed=71)
    messages = ctx.corpus.messages(SESSION_MESSAGES, 1, seed=72)
    raw = RawFacts(ctx.folder("w3s-raw") / "raw.db")
    raw_history = RawHistory(ctx.folder("w3s-raw-history") / "raw.db", fts=True)
    db = sqlmem.open(ctx.folder("w3s-sqlmem") / "memory.db")
    now = int(time.time() * 1000)
    for start in range(0, facts, 1_000):
        chunk = rows[start : start + 1_000]
        raw.index_many([_raw_row(f, now) for f in chunk])
        db.facts.index_many([_fact(f) for f in chunk])
    raw_history.append_many(SESSION, [(m.role, m.content) for m in messages], now)
    db.history.append_many(
        SESSION,
        [sqlmem.Message(role=m.role, content=m.content) for m in messages],  # type: ignore[arg-type]
    )
    ctx.settle()
    return raw, raw_history, db


def w3s_small_store(ctx: Context) -> list[Row]:
    facts = max(ctx.sizes.w3_facts // 10, 100)
    raw, raw_history, db = _stores(ctx, facts)
    queries = [q for q, _ in ctx.corpus.queries(ctx.sizes.w3_queries, seed=73)]
    search = db.facts.search
    variants: dict[str, Any] = {
        "raw_and": lambda q: raw.search(q, 10, "AND"),
        "raw_or": lambda q: raw.search(q, 10, "OR"),
        "sqlmem_all": lambda q: search(q, 10, mode="all"),
        "sqlmem_any": lambda q: search(q, 10, mode="any"),
        "raw_recent": lambda _: raw_history.get_recent(SESSION, WINDOW),
        "sqlmem_recent": lambda _: db.history.get_recent(SESSION, WINDOW),
    }
    try:
        ctx.warm(2 * len(queries), 74, list(variants.values()))
        samples = latency_interleaved(variants, queries)
    finally:
        db.close()
        raw.close()
        raw_history.close()
    rows = latency_rows(
        f"W3s fact search, mode all, {facts:,} facts (vs raw AND)",
        samples,
        "raw_and",
        "sqlmem_all",
        "report: fixed cost per call",
        None,
        p99=False,
    )
    rows += latency_rows(
        f"W3s fact search, mode any, {facts:,} facts (vs raw OR)",
        samples,
        "raw_or",
        "sqlmem_any",
        "report: fixed cost per call",
        None,
        p99=False,
    )
    rows += latency_rows(f"W3s get_recent({WINDOW}), {SESSION_MESSAGES}-message session",
                         samples, "raw_recent", "sqlmem_recent", "report: fixed cost per call",
                         None, p99=False)  # fmt: skip
    for row in rows:
        row.extra["fixed_cost_us"] = row.sqlmem - row.raw
    return rows
