"""W3 (fact search), W3b (search with a filter), W3m (with a metadata operator), W3c
(indexing facts).

Both sides index the same generated facts (same ids, same order, same tokenizer), so
their BM25 scores are identical and the raw OR query is the exact reference for mode
"any". Facts are built as `sqlmem.Fact` objects before timing starts.
"""

from __future__ import annotations

import json
import time
from typing import Any

import apsw

import sqlmem
from sqlmem.rules.encoding import dumps_json
from sqlmem.rules.filters import prepare_fact
from sqlmem.sqlite.stores.facts_sql import upsert_sql

from .any_mode import AndThenOr, PrunedOr, RescoreAny, SplitAny, agreement
from .context import Context
from .data import FactRow
from .harness import (
    Row,
    cost_ratio_rate,
    latency_interleaved,
    median,
    throughput_rounds,
    with_peers,
)
from .history_workloads import latency_rows
from .raw import RawFacts, RawMetaFacts, stable_plans

__all__ = [
    "w3_fact_search",
    "w3b_filtered_search",
    "w3c_index_facts",
    "w3m_metadata_search",
    "w3p_any_prototypes",
]

TAG, CATEGORY = "tag07", "area/topic07"


def _now() -> int:
    return time.time_ns() // 1_000_000


def _raw_row(f: FactRow, now: int) -> tuple[Any, ...]:
    return (f.id, f.content, f.category, json.dumps([f.tag]), now, now)


def _fact(f: FactRow) -> sqlmem.Fact:
    return sqlmem.Fact(id=f.id, content=f.content, tags=[f.tag], category=f.category)


def fact_dbs(ctx: Context, count: int, name: str) -> tuple[RawFacts, sqlmem.MemoryDB]:
    """Both sides hold the same `count` facts, indexed 1,000 per transaction."""
    assert ctx.cache is not None
    if name in ctx.cache:
        return ctx.cache[name]  # type: ignore[no-any-return]
    ctx.log(f"building the fact databases ({count:,} facts) ...")
    rows = ctx.corpus.facts(count, seed=31)
    raw = RawFacts(ctx.folder(f"{name}-raw") / "raw.db")
    db = sqlmem.open(ctx.folder(f"{name}-sqlmem") / "memory.db")
    for start in range(0, count, 1_000):
        chunk = rows[start : start + 1_000]
        now = _now()
        raw.index_many([_raw_row(f, now) for f in chunk])
        db.facts.index_many([_fact(f) for f in chunk])
    raw.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.checkpoint()
    ctx.settle()
    ctx.log("fact databases built")
    ctx.cache[name] = (raw, db)
    return raw, db


def _ids(rows: list[Any]) -> list[str]:
    return [r[0] for r in rows]


def _agreement(got: dict[str, list[Any]], name: str) -> float:
    exact = got["raw_or"]
    return sum(agreement(a, b) for a, b in zip(got[name], exact, strict=True)) / len(exact)


def w3_fact_search(ctx: Context) -> list[Row]:
    s = ctx.sizes
    raw, db = fact_dbs(ctx, s.w3_facts, "facts")
    queries = [q for q, _ in ctx.corpus.queries(s.w3_queries, seed=41)]
    search = db.facts.search
    ctx.warm(3 * s.w3_queries, 43, [
        lambda q: search(q, 10, mode="any"), lambda q: search(q, 10, mode="all"),
        lambda q: raw.search(q, 10, "AND"), lambda q: raw.search(q, 10, "OR"),
    ])  # fmt: skip
    got: dict[str, list[Any]] = {}
    samples = latency_interleaved(
        {
            "raw_and": lambda q: _ids(raw.search(q, 10, "AND")),
            "raw_or": lambda q: _ids(raw.search(q, 10, "OR")),
            "sqlmem_all": lambda q: [f.id for f in search(q, 10, mode="all")],
            "sqlmem_any": lambda q: [f.id for f in search(q, 10, mode="any")],
        },
        queries,
        collect=got,
    )
    rows = latency_rows(f"W3 fact search, mode all, {s.w3_facts:,} facts (vs raw AND)",
                        samples, "raw_and", "sqlmem_all", "p50 <= 1.3x raw AND", 1.3)  # fmt: skip
    any_rows = latency_rows("W3 fact search, mode any (vs raw AND)", samples, "raw_and",
                            "sqlmem_any", "p50 <= 2x raw AND, agreement >= 0.90", 2.0)  # fmt: skip
    any_agree = _agreement(got, "sqlmem_any")
    any_rows[0].extra["agreement"] = any_agree
    if any_agree < 0.90:
        any_rows[0].failed_condition = f"agreement {any_agree:.3f} < 0.90"
    rows += any_rows
    rows += latency_rows("W3 fact search, mode any (vs raw OR, exact)", samples, "raw_or",
                         "sqlmem_any", "report", None, p99=False)  # fmt: skip
    return rows


def w3p_any_prototypes(ctx: Context) -> list[Row]:
    """The designs weighed for mode "any" (any_mode.py), beside sqlmem's: not in the default
    run (`--only W3p`); kept so the decision can be re-checked."""
    s = ctx.sizes
    raw, db = fact_dbs(ctx, s.w3_facts, "facts")
    queries = [q for q, _ in ctx.corpus.queries(s.w3_queries, seed=41)]
    search = db.facts.search
    # The prototypes read sqlmem's own file through a plain apsw connection.
    proto_conn = apsw.Connection(str(db.path), flags=apsw.SQLITE_OPEN_READONLY)
    split = SplitAny(proto_conn, cutoff=0.02)
    rescore = RescoreAny(proto_conn, cutoff=0.01, m=50)
    pruned = PrunedOr(proto_conn, cutoff=0.01)
    and_or = AndThenOr(proto_conn)
    ctx.warm(3 * s.w3_queries, 43, [
        lambda q: search(q, 10, mode="any"), lambda q: raw.search(q, 10, "AND"),
        lambda q: raw.search(q, 10, "OR"),
        *(lambda q, p=p: p.split(p.tokens(q)) for p in (split, rescore, pruned)),
    ])  # fmt: skip
    got: dict[str, list[Any]] = {}
    try:
        samples = latency_interleaved(
            {
                "raw_and": lambda q: _ids(raw.search(q, 10, "AND")),
                "raw_or": lambda q: _ids(raw.search(q, 10, "OR")),
                "sqlmem_any": lambda q: [f.id for f in search(q, 10, mode="any")],
                "proto_split": split.search,
                "proto_rescore": rescore.search,
                "proto_pruned": pruned.search,
                "proto_and_or": and_or.search,
            },
            queries,
            collect=got,
        )
    finally:
        proto_conn.close()
    labels = {
        "sqlmem_any": "W3p sqlmem any, for reference (vs raw AND)",
        "proto_split": "W3p prototype any: split rare/common, exact merge (vs raw AND)",
        "proto_rescore": "W3p prototype any: rare-word OR top 50 + rescore (vs raw AND)",
        "proto_pruned": "W3p prototype any: OR over rare words only (vs raw AND)",
        "proto_and_or": "W3p prototype any: AND, OR when < 10 (vs raw AND)",
    }
    rows: list[Row] = []
    for name, label in labels.items():
        proto = latency_rows(label, samples, "raw_and", name, "report", None)
        proto[0].extra["agreement"] = _agreement(got, name)
        if name == "proto_split":  # how often each prototype took which path
            stats = {"split": split.stats, "rescore": rescore.stats, "and_or": and_or.stats}
            proto[0].extra["prototype_paths"] = stats
        rows += proto
    return rows


def w3b_filtered_search(ctx: Context) -> list[Row]:
    s = ctx.sizes
    raw, db = fact_dbs(ctx, s.w3_facts, "facts")
    queries = [q for q, _ in ctx.corpus.queries(s.w3b_queries, seed=42)]
    search = db.facts.search
    samples = latency_interleaved(
        {
            "raw_tag": lambda q: raw.search_tag(q, TAG),
            "raw_category": lambda q: raw.search_category(q, CATEGORY),
            "sqlmem_tag": lambda q: search(q, 10, mode="all", tags=[TAG]),
            "sqlmem_category": lambda q: search(q, 10, mode="all", category=CATEGORY),
        },
        queries,
    )
    return [
        *latency_rows("W3b search + tag filter (2%), mode all", samples, "raw_tag",
                      "sqlmem_tag", "p50 <= 2x raw, same filter", 2.0),
        *latency_rows("W3b search + category filter (2%), mode all", samples, "raw_category",
                      "sqlmem_category", "p50 <= 2x raw, same filter", 2.0),
    ]  # fmt: skip


def _metadata(i: int) -> dict[str, Any]:
    """W3m's metadata: priority 0-9 (half pass `$gte 5`), lang en/fr/de (two thirds pass
    `$in ["en", "de"]`), and a few more keys, as agents store them."""
    return {
        "priority": i % 10,
        "lang": ("en", "fr", "de")[i % 3],
        "session": f"telegram:{i % 97}:",
        "turn": i,
    }


def w3m_metadata_search(ctx: Context) -> list[Row]:
    """W3b's searches with a metadata operator added, against raw SQL doing the same
    filter with JSON paths (own databases: W3/W3b's facts carry no metadata)."""
    s = ctx.sizes
    facts = ctx.corpus.facts(s.w3_facts, seed=31)
    raw = RawMetaFacts(ctx.folder("w3m-raw") / "raw.db")
    db = sqlmem.open(ctx.folder("w3m-sqlmem") / "memory.db")
    ctx.log(f"building the metadata fact databases ({s.w3_facts:,} facts) ...")
    for start in range(0, len(facts), 1_000):
        chunk = range(start, min(start + 1_000, len(facts)))
        now = _now()
        raw.index_many([(*_raw_row(facts[i], now), dumps_json(_metadata(i))) for i in chunk])
        db.facts.index_many(
            [_fact(facts[i]).model_copy(update={"metadata": _metadata(i)}) for i in chunk]
        )
    raw.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.checkpoint()
    ctx.settle()
    queries = [q for q, _ in ctx.corpus.queries(s.w3b_queries, seed=42)]
    search = db.facts.search
    langs = ["en", "de"]
    langs_json = json.dumps(langs)
    try:
        samples = latency_interleaved(
            {
                "raw_tag": lambda q: raw.search_tag_priority(q, TAG, 5),
                "raw_category": lambda q: raw.search_category_lang(q, CATEGORY, langs_json),
                "sqlmem_tag": lambda q: search(
                    q, 10, mode="all", tags=[TAG], metadata={"priority": {"$gte": 5}}
                ),
                "sqlmem_category": lambda q: search(
                    q, 10, mode="all", category=CATEGORY, metadata={"lang": {"$in": langs}}
                ),
            },
            queries,
        )
    finally:
        db.close()
        raw.close()
    return [
        *latency_rows("W3m search + tag (2%) + metadata $gte, mode all", samples, "raw_tag",
                      "sqlmem_tag", "p50 <= 2x raw, same filter", 2.0),
        *latency_rows("W3m search + category (2%) + metadata $in, mode all", samples,
                      "raw_category", "sqlmem_category", "p50 <= 2x raw, same filter", 2.0),
    ]  # fmt: skip


def w3c_index_facts(ctx: Context) -> list[Row]:
    s = ctx.sizes
    single = ctx.corpus.facts(s.w3c_single, seed=61, prefix="s")
    batched = ctx.corpus.facts(s.w3c_batches * s.w3c_batch_size, seed=62, prefix="b")
    single_facts = [_fact(f) for f in single]
    batched_facts = [_fact(f) for f in batched]
    raw = RawFacts(ctx.folder("w3c-raw") / "raw.db")
    db = sqlmem.open(ctx.folder("w3c-sqlmem") / "memory.db")
    rounds = max(2, min(10, s.w3c_single // 50))
    bounds = [s.w3c_single * r // rounds for r in range(rounds + 1)]

    def raw_single(r: int) -> int:
        for f in single[bounds[r] : bounds[r + 1]]:
            raw.index(_raw_row(f, _now()))
        return bounds[r + 1] - bounds[r]

    def sqlmem_single(r: int) -> int:
        index = db.facts.index
        for f in single_facts[bounds[r] : bounds[r + 1]]:
            index(f)
        return bounds[r + 1] - bounds[r]

    size = s.w3c_batch_size

    def raw_many(r: int) -> int:
        now = _now()
        raw.index_many([_raw_row(f, now) for f in batched[r * size : (r + 1) * size]])
        return size

    def sqlmem_many(r: int) -> int:
        db.facts.index_many(batched_facts[r * size : (r + 1) * size])
        return size

    su_table = _sqlite_utils_facts(ctx.folder("w3c-sqlite-utils") / "su.db")
    su_rows = [_su_row(f) for f in batched]

    def su_many(r: int) -> int:
        assert su_table is not None
        su_table.upsert_all(su_rows[r * size : (r + 1) * size], pk="id", batch_size=size)
        return size

    same = _SameSchemaUpserts(ctx.folder("w3c-same-schema") / "memory.db")
    same_single_rows = [same.row(f) for f in single_facts]
    same_many_rows = [same.row(f) for f in batched_facts]

    def same_single(r: int) -> int:
        for row in same_single_rows[bounds[r] : bounds[r + 1]]:
            same.upsert([row])
        return bounds[r + 1] - bounds[r]

    def same_many(r: int) -> int:
        same.upsert(same_many_rows[r * size : (r + 1) * size])
        return size

    try:
        one = throughput_rounds(
            {"raw": raw_single, "sqlmem": sqlmem_single, "same": same_single}, rounds
        )
        variants = {"raw": raw_many, "sqlmem": sqlmem_many, "same": same_many}
        if su_table is not None:
            variants["sqlite-utils"] = su_many
        many = throughput_rounds(variants, s.w3c_batches)
        assert raw.count() == db.facts.count() == len(single) + len(batched)
    finally:
        raw.close()
        db.close()
        same.close()
    out = []
    for label, rates in ((f"W3c index, single upserts ({len(single):,})", one),
                         (f"W3c index_many({size:,})", many)):  # fmt: skip
        sq, rw, floor = median(rates["sqlmem"]), median(rates["raw"]), median(rates["same"])
        row = Row(label, "facts/s", sq, rw, cost_ratio_rate(sq, rw), "<= 1.5x raw", 1.5)
        if "sqlite-utils" in rates:  # index_many's peer: faster than it is the target
            row = with_peers(row, {"sqlite-utils": median(rates["sqlite-utils"])},
                             rate=True, limit=1.0)  # fmt: skip
        out.append(row)
        out.append(Row(f"{label}, raw on sqlmem's schema (same statement, values ready)",
                       "facts/s", sq, floor, cost_ratio_rate(sq, floor)))  # fmt: skip
    return out


def _sqlite_utils_facts(path: Any) -> Any | None:
    """sqlite-utils set up for the same facts as a competent user would (None when it is
    not installed): WAL, the table created first with its columns and `id` as primary
    key, and its full-text index over `content` kept current by the triggers
    `enable_fts(create_triggers=True)` installs (porter, like sqlmem's tokenizer), so a
    fact is searchable once written, as in sqlmem. Written with `upsert_all`, a batch of
    1,000 per call (its `batch_size`)."""
    try:
        import sqlite_utils
    except ImportError:
        return None
    db = sqlite_utils.Database(str(path))
    db.enable_wal()
    table = db["facts"]
    table.create({"id": str, "content": str, "category": str, "tags": str,
                  "created_at": int, "updated_at": int}, pk="id")  # fmt: skip
    table.enable_fts(["content"], tokenize="porter", create_triggers=True)
    return table


def _su_row(f: FactRow) -> dict[str, Any]:
    now = _now()
    return {"id": f.id, "content": f.content, "category": f.category,
            "tags": json.dumps([f.tag]), "created_at": now, "updated_at": now}  # fmt: skip


class _SameSchemaUpserts:
    """The floor of W3c: raw apsw on a file sqlmem migrated, running the very upsert
    statement sqlmem runs (same columns, indexes and triggers) with every value computed
    beforehand. What sqlmem costs above this is its own Python (checks, encoding,
    fingerprints); what this costs above `RawFacts` is the schema."""

    def __init__(self, path: Any) -> None:
        sqlmem.open(path).close()
        self.conn = apsw.Connection(str(path))
        self.conn.pragma("journal_mode", "wal")
        self.conn.pragma("synchronous", "NORMAL")
        self.conn.pragma("recursive_triggers", "ON")
        self.conn.pragma("foreign_keys", "ON")
        stable_plans(self.conn)

    @staticmethod
    def row(fact: sqlmem.Fact) -> tuple[Any, ...]:
        r = prepare_fact(fact)
        now = _now()
        return (r.id, r.content, r.source, r.category, r.tags, r.metadata, now, now,
                r.search_text, r.layer, r.kind, r.confidence, r.salience, r.refs,
                r.expires_ms, r.fingerprint, 1, r.key, r.valid_from_ms)  # fmt: skip

    def upsert(self, rows: list[tuple[Any, ...]]) -> None:
        params: list[Any] = []
        for row in rows:
            params += row
        with self.conn:
            self.conn.execute(upsert_sql(len(rows), keep_created=True, keep_hits=True), params)

    def close(self) -> None:
        self.conn.close()
