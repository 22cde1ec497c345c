"""W3d: `remember` (SPEC 12), of a new fact and of a duplicate, against `index` and
against raw apsw running the same SQL.

Targets (issue 15): remember of a new fact costs at most 1.3x `index` of a new fact, and
of a duplicate (a fingerprint match: the merge) at most 1.5x. The raw side is the same
work with no library layer: one `BEGIN IMMEDIATE` transaction holding the id check, the
fingerprint lookup and the insert or merge update, the very statements of
`sqlmem.sqlite.stores.facts_sql`, on a file of the same schema (made by sqlmem, written by
apsw), fingerprints from hashlib over the same normalisation.

Each round alternates the variants (`throughput_rounds`), each on facts of its own (the
sides never write the same ids).
"""

from __future__ import annotations

import json
import time
from typing import Any

import apsw

import sqlmem
from sqlmem.rules.identity import fingerprint
from sqlmem.search.query import segment
from sqlmem.sqlite.stores import facts_sql

from .context import Context
from .data import FactRow
from .harness import Row, cost_ratio_rate, median, throughput_rounds
from .raw import connect

__all__ = ["w3d_remember"]

_INSERT = facts_sql.upsert_sql(1, keep_created=True)


def _now() -> int:
    return time.time_ns() // 1_000_000


def _fact(f: FactRow, fact_id: str | None = None, content: str | None = None) -> sqlmem.Fact:
    return sqlmem.Fact(
        id=fact_id or f.id, content=content or f.content, tags=[f.tag], category=f.category
    )


class RawRemember:
    """remember's SQL through plain apsw (the merge of tags only: these facts carry no
    references or metadata, and the same confidence and salience)."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn

    def _insert(self, f: FactRow, fp: str, now: int) -> None:
        tags = json.dumps([f.tag])
        self.conn.execute(
            _INSERT,
            (
                *(f.id, f.content, "", f.category, tags, "{}", now, now, segment(f.content)),
                *("semantic", "", 1.0, 0.5, "[]", None, fp, 1, "", None),
            ),
        )

    def index(self, f: FactRow) -> None:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        self._insert(f, fingerprint(f.content), _now())
        conn.execute("COMMIT")

    def remember(self, f: FactRow, fact_id: str | None, content: str | None) -> None:
        """`f`, or `f` under another id and text (a duplicate of it)."""
        fact_id, content = fact_id or f.id, content or f.content
        conn, now = self.conn, _now()
        fp = fingerprint(content)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(facts_sql.ID_EXISTS, (fact_id,)).fetchall()
        found: list[Any] = conn.execute(
            facts_sql.REMEMBER_FIND, {"fingerprint": fp, "layer": "semantic", "now": now}
        ).fetchall()
        if found:
            pk, _, tags, refs, meta, conf, sal, exp, _key = found[0]
            have = json.loads(tags)
            if f.tag not in have:
                tags = json.dumps([*have, f.tag])
            merged = (tags, refs, meta, 1 - (1 - conf) * (1 - 1.0), max(sal, 0.5), exp)
            conn.execute(facts_sql.REMEMBER_MERGE, (*merged, now, pk))
        else:
            self._insert(FactRow(fact_id, content, f.tag, f.category), fp, now)
        conn.execute("COMMIT")


def w3d_remember(ctx: Context) -> list[Row]:
    s = ctx.sizes
    n = s.w3c_single
    base = ctx.corpus.facts(n, seed=71, prefix="base")  # stored first: the duplicates' targets
    new = {side: ctx.corpus.facts(n, seed=72 + k, prefix=f"{side}") for k, side in
           enumerate(("raw_new", "sq_new", "raw_index", "sq_index"))}  # fmt: skip
    db = sqlmem.open(ctx.folder("w3d-sqlmem") / "memory.db")
    raw_path = ctx.folder("w3d-raw") / "memory.db"
    sqlmem.open(raw_path).close()  # the same schema, then written by apsw alone
    raw = RawRemember(connect(raw_path))
    db.facts.index_many([_fact(f) for f in base])
    for f in base:
        raw.index(f)
    facts = {side: [_fact(f) for f in rows] for side, rows in new.items()}
    # A duplicate: another id, the same text shouted (same fingerprint), another tag.
    dups = [_fact(f, f"dup{i}", f.content.upper()) for i, f in enumerate(base)]
    rounds = max(2, min(10, n // 50))
    bounds = [n * r // rounds for r in range(rounds + 1)]

    def part(r: int) -> range:
        return range(bounds[r], bounds[r + 1])

    def run(fn: Any) -> Any:
        def go(r: int) -> int:
            for i in part(r):
                fn(i)
            return len(part(r))

        return go

    remember, index = db.facts.remember, db.facts.index
    variants = {
        "raw_index": run(lambda i: raw.index(new["raw_index"][i])),
        "sqlmem_index": run(lambda i: index(facts["sq_index"][i])),
        "raw_new": run(lambda i: raw.remember(new["raw_new"][i], None, None)),
        "sqlmem_new": run(lambda i: remember(facts["sq_new"][i])),
        "raw_dup": run(lambda i: raw.remember(base[i], f"dup{i}", base[i].content.upper())),
        "sqlmem_dup": run(lambda i: remember(dups[i])),
    }
    ctx.settle()
    try:
        rates = {k: median(v) for k, v in throughput_rounds(variants, rounds).items()}
        assert db.facts.count() == 3 * n
        merged = db.facts.get(base[0].id)
        assert merged is not None and merged.hits == 2
    finally:
        raw.conn.close()
        db.close()
    out = []
    for label, kind, limit in (("new facts", "new", 1.3), ("duplicates", "dup", 1.5)):
        sq, rw = rates[f"sqlmem_{kind}"], rates[f"raw_{kind}"]
        out.append(
            Row(f"W3d remember, {label} ({n:,})", "facts/s", sq, rw, cost_ratio_rate(sq, rw))
        )
        index_rate = rates["sqlmem_index"]
        out.append(
            Row(
                f"W3d remember, {label}, against index",
                "facts/s (raw column: sqlmem index)",
                sq,
                index_rate,
                cost_ratio_rate(sq, index_rate),
                f"<= {limit}x index",
                limit,
            )
        )
    raw_index = rates["raw_index"]
    out.append(
        Row(
            "W3d index, single upserts (same file shape)",
            "facts/s",
            rates["sqlmem_index"],
            raw_index,
            cost_ratio_rate(rates["sqlmem_index"], raw_index),
        )
    )
    return out
