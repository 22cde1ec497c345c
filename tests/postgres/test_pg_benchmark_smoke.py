"""benchmarks/postgres_workloads.py runs end to end at tiny sizes on the session's server.

No timing is asserted (the machine is shared): this pins that the rows keep coming, with
PostgreSQL and SQLite measured in the same run, and that mode "any" on PostgreSQL agrees
with exact BM25 (the agreement is not a timing: it must hold everywhere).
"""

from __future__ import annotations

import math
from pathlib import Path

from benchmarks.context import SIZES, Context
from benchmarks.data import Corpus
from benchmarks.postgres_workloads import postgres_rows


def test_postgres_rows_at_smoke_size(pg_dsn: str, tmp_path: Path) -> None:
    ctx = Context(SIZES["smoke"], Corpus(20240601), tmp_path, verbose=False)
    rows = postgres_rows(ctx, pg_dsn)
    assert [r.workload.split()[0] for r in rows] == ["PG"] * 6
    for row in rows:
        assert row.sqlmem > 0 and row.raw > 0 and row.ratio is not None
        assert math.isfinite(row.ratio)
    target = rows[-1]
    assert target.limit == 3.0 and target.extra["agreement"] >= 0.9
    assert target.failed_condition is None
    assert rows[-2].extra["agreement_by_side"]["pg"] == 1.0  # exact BM25 in the server
