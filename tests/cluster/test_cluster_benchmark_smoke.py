"""benchmarks/postgres_cluster.py runs end to end at tiny sizes (no timing asserted: the
machine is shared): its rows for one server, PgBouncer and the cluster, and one kill."""

from __future__ import annotations

import re

import pytest
from pgcluster import AutoFailoverCluster, PgBouncer
from pgserver import PgServer

from benchmarks import postgres_cluster as bench


def test_rows_and_one_failover(
    single_server: PgServer,
    bouncer: PgBouncer,
    cluster: AutoFailoverCluster,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(bench, "FACTS", 60)
    monkeypatch.setattr(bench, "APPENDS", 40)
    bench.measure("one server", single_server.dsn)
    bench.measure("PgBouncer", bouncer.dsn, transaction_pooler=True)
    bench.measure("cluster", cluster.dsn())
    bench.failovers(cluster, 1)
    out = capsys.readouterr().out
    assert len(re.findall(r"appends/s 1 thread +\d+, 4 threads +\d+; fact search p50", out)) == 3
    assert re.search(r"kill 1: DSN writable after +[\d.]+ s, every writer back after", out)
    assert "NOT sqlmem errors" not in out
    cluster.wait_until_healthy(60)
