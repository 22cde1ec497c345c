"""Hybrid search's fusion on SQLite: the two legs as ranked ids, one fused list,
full rows read for the fused top_k only.

The shared rule (`search.vectors.reciprocal_rank_fusion`, as `rules.hybrid.fuse` applies
it for the twin and PostgreSQL) decides the order; this module only avoids building what
the fusion drops. Each leg reads `max(4 * top_k, 50)` facts; building them all as Fact
records (then copying the winners to set their fused score), in two read snapshots, cost
hybrid ~300-450 µs above "any" + "vector" top-10 (6,000 facts, p50, single-threaded
BLAS; ~170 µs now). Here the BM25 leg keeps its rows as SQLite returned them, the vector
leg brings (pk, id) only, and a fact only the vector leg found is read whole only when it
makes the top_k, all in the caller's read snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from ...rules.encoding import dumps_json
from ...search.vectors import reciprocal_rank_fusion
from . import vectors_sql as sql

__all__ = ["fused_rows"]


def fused_rows(
    conn: apsw.Connection,
    lexical: Sequence[Sequence[Any]],
    semantic: Sequence[Sequence[Any]],
    top_k: int,
) -> list[tuple[Any, ...]]:
    """The fused top_k as stored-fact rows with `-score` last (`rules.rows.facts_from_rows`
    negates it back): `lexical` are the BM25 leg's rows (id first, bm25 last), `semantic`
    the vector leg's `(pk, id, -cosine)`, each best first."""
    fused = reciprocal_rank_fusion([row[0] for row in lexical], [row[1] for row in semantic], top_k)
    by_id: dict[str, Sequence[Any]] = {row[0]: row[:-1] for row in lexical}
    wanted = {fact_id for fact_id, _ in fused}
    pks = [pk for pk, fact_id, _ in semantic if fact_id in wanted and fact_id not in by_id]
    if pks:  # facts only the vector leg found, among the winners
        found: list[Any] = conn.execute(sql.ROWS_BY_PK, {"pks": dumps_json(pks)}).fetchall()
        by_id.update((row[1], row[1:]) for row in found)
    return [(*by_id[fact_id], -score) for fact_id, score in fused]
