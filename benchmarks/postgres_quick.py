"""A quick measurement of the PostgreSQL backend beside embedded SQLite (issue 21).

Not part of the benchmark runner yet: `python -m benchmarks.postgres_quick [DSN]` starts a
throwaway server (tests/pgserver.py) unless a DSN is given, and prints appends per second
(1 thread, 4 threads), get_recent(50) p50, and fact search p50 in modes "all" and "any"
over AGENTS agents of FACTS_PER_AGENT facts each, with SQLite's numbers for one agent file
of the same size measured in the same run.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import sqlmem
import sqlmem.postgres as sp

AGENTS = 10
FACTS_PER_AGENT = 2_500
WORDS = [f"w{i}" for i in range(3_000)] + ["dog", "cat", "run", "memory", "agent"] * 40


def _text(rng: random.Random, n: int = 12) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _p50(fn: Any, queries: list[str]) -> float:
    times = []
    for q in queries:
        t = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def _appends(db: Any, threads: int, per_thread: int) -> float:
    def work(n: int) -> None:
        for i in range(per_thread):
            db.history.append(f"s{n}", sqlmem.Message(role="user", content=f"message {i} dog"))

    pool = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    t = time.perf_counter()
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    return threads * per_thread / (time.perf_counter() - t)


def measure(name: str, dbs: list[Any]) -> None:
    rng = random.Random(7)
    main = dbs[0]
    print(f"{name}: appends/s 1 thread {_appends(main, 1, 400):.0f}, "
          f"4 threads {_appends(main, 4, 200):.0f}")  # fmt: skip
    main.history.append_many("long", [sqlmem.Message(role="user", content=_text(rng))
                                      for _ in range(200)])  # fmt: skip
    recent = _p50(lambda _q: main.history.get_recent("long", 50), ["x"] * 200)
    for db in dbs:
        facts = [sqlmem.Fact(content=_text(rng)) for _ in range(FACTS_PER_AGENT)]
        for i in range(0, len(facts), 500):
            db.facts.index_many(facts[i : i + 500])
    queries = [f"{rng.choice(WORDS)} {rng.choice(WORDS)} dog" for _ in range(200)]
    all_p50 = _p50(lambda q: main.facts.search(q, mode="all"), queries)
    any_p50 = _p50(lambda q: main.facts.search(q, mode="any"), queries)
    print(f"{name}: get_recent(50) p50 {recent:.2f} ms; fact search p50 all {all_p50:.2f} ms, "
          f"any {any_p50:.2f} ms ({len(dbs)} agents x {FACTS_PER_AGENT} facts)")  # fmt: skip


def main() -> None:
    server = None
    if len(sys.argv) > 1:
        dsn = sys.argv[1]
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        import pgserver  # type: ignore[import-not-found]

        server = pgserver.start()
        dsn = server.dsn
        print(f"server started in {server.started_in:.2f} s")
    try:
        backend = sp.PostgresBackend(dsn, pool_size=8)
        tag = f"b{time.time_ns()}"
        measure("postgres", [backend.open(f"{tag}-{i}") for i in range(AGENTS)])
        backend.close()
        with tempfile.TemporaryDirectory() as tmp, sqlmem.open(Path(tmp) / "m.db") as db:
            measure("sqlite", [db])
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
