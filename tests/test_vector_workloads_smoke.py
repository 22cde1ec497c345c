"""benchmarks/vector_workloads.py (W10, W11, W12) runs at tiny sizes and returns rows
in the runner's format. No timing is asserted: this pins that the workloads keep working
until the runner registers them."""

from __future__ import annotations

from pathlib import Path

from benchmarks.context import SIZES, Context
from benchmarks.data import Corpus
from benchmarks.vector_workloads import w10_vector_search, w11_hybrid_search, w12_session_search


def test_vector_workloads_return_rows(tmp_path: Path) -> None:
    ctx = Context(SIZES["smoke"], Corpus(), tmp_path, verbose=False)
    try:
        rows = w10_vector_search(ctx) + w11_hybrid_search(ctx) + w12_session_search(ctx)
    finally:
        for kept in (ctx.cache or {}).values():
            for item in kept:
                getattr(item, "close", lambda: None)()
    assert {row.workload.split()[0] for row in rows} == {"W10", "W11", "W12"}
    assert len(rows) == 7  # W10: p50, p99, filtered p50; W11: hybrid, lock hold; W12: 2
    assert all(row.sqlmem > 0 and row.raw > 0 for row in rows)
    assert all(row.to_json()["status"] in {"PASS", "FAIL", "report"} for row in rows)
    (hold,) = [row for row in rows if "write-lock hold" in row.workload]
    assert hold.extra["transactions"] == {"plain": 10, "embedder": 10}  # one per index_many
    sessions = [row.workload for row in rows if row.workload.startswith("W12")]
    assert len(sessions) == 2 and "of 50 messages" in sessions[0]
