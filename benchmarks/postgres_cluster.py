"""sqlmem on one PostgreSQL server, through PgBouncer, and on a replicated cluster, in one run.

`python -m benchmarks.postgres_cluster [--kills 5]` (root or the postgres user; needs the
Debian packages the cluster tests use: see tests/pgcluster.py) builds a throwaway server,
a PgBouncer in transaction pooling mode in front of it, and a pg_auto_failover cluster
(primary + synchronous secondary), then prints for each: appends per second (1 thread,
4 threads) and fact search p50 (one agent of FACTS facts, mode "any"). Then it SIGKILLs
the cluster's primary `--kills` times under 4 writing threads and prints, per kill, the
seconds until the multi-host DSN took a write and until every writer thread had written
again, and appends per second before the kill, on the promoted primary alone, and after
the killed node rejoined as the synchronous secondary.

The single server is the tests' one (fsync and synchronous_commit off); the cluster's
nodes keep PostgreSQL's defaults (fsync on, synchronous_commit on with a synchronous
standby): the gap between them is replication and durability, not sqlmem.
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import sqlmem
import sqlmem.postgres as sp

FACTS = 2_000
APPENDS = 600  # per measurement: one thread, then four threads of a quarter each
WORDS = [f"w{i}" for i in range(2_000)] + ["dog", "cat", "memory", "agent"] * 40


def _appends(db: Any, threads: int, per_thread: int) -> float:
    def work(n: int) -> None:
        for i in range(per_thread):
            db.history.append(f"s{n}", sqlmem.Message(role="user", content=f"message {i} dog"))

    pool = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    start = time.perf_counter()
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    return threads * per_thread / (time.perf_counter() - start)


def _search_p50(db: Any, rng: random.Random) -> float:
    words = [" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(FACTS)]
    facts = [sqlmem.Fact(content=text) for text in words]
    for i in range(0, len(facts), 500):
        db.facts.index_many(facts[i : i + 500])
    times = []
    for _ in range(200):
        query = f"{rng.choice(WORDS)} {rng.choice(WORDS)} dog"
        start = time.perf_counter()
        db.facts.search(query, mode="any")
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(name: str, dsn: str, **options: Any) -> None:
    from pgserver import new_agent_id

    with sp.open(dsn, new_agent_id(), pool_size=4, **options) as db:
        one, four = _appends(db, 1, APPENDS // 2), _appends(db, 4, APPENDS // 8)
        p50 = _search_p50(db, random.Random(7))
    print(f"{name:<22} appends/s 1 thread {one:6.0f}, 4 threads {four:6.0f}; "
          f"fact search p50 {p50:6.2f} ms", flush=True)  # fmt: skip


class Writers:
    """4 threads appending as fast as they can; each call's end time and outcome kept."""

    def __init__(self, dsn: str) -> None:
        from pgserver import new_agent_id

        self.db = sp.open(dsn, new_agent_id(), sqlmem.StoreConfig(busy_timeout_ms=2000))
        self.acks: list[list[float]] = [[] for _ in range(4)]
        self.stop = threading.Event()
        self.strange: list[str] = []
        self.threads = [threading.Thread(target=self._work, args=(n,)) for n in range(4)]
        for th in self.threads:
            th.start()

    def _work(self, n: int) -> None:
        i = 0
        while not self.stop.is_set():
            try:
                self.db.history.append(f"s{n}", sqlmem.Message(role="user", content=f"m{i}"))
                self.acks[n].append(time.monotonic())
            except sqlmem.StorageBusyError:
                time.sleep(0.02)
            except BaseException as exc:
                self.strange.append(repr(exc))
                return
            i += 1

    def rate(self, since: float, until: float) -> float:
        return sum(sum(since <= t < until for t in acks) for acks in self.acks) / (until - since)

    def all_back_after(self, moment: float, seconds: float) -> float:
        deadline = time.monotonic() + seconds
        while True:
            later = [[t for t in acks if t > moment] for acks in self.acks]
            if all(later):
                return max(min(ts) for ts in later) - moment
            if time.monotonic() > deadline:
                raise RuntimeError("writers did not all come back")
            time.sleep(0.05)

    def close(self) -> None:
        self.stop.set()
        for th in self.threads:
            th.join()
        self.db.close()


def failovers(cluster: Any, kills: int) -> None:
    writers = Writers(cluster.dsn())
    rows = []
    try:
        for k in range(kills):
            time.sleep(3)
            now = time.monotonic()
            before = writers.rate(now - 3, now)
            killed = time.monotonic()
            cluster.kill(cluster.role("primary"))
            dead = time.monotonic()  # an append acknowledged after this: the new primary's
            writable = cluster.wait_for_writable(120) + (dead - killed)
            back = writers.all_back_after(dead, 120) + (dead - killed)
            time.sleep(3)
            now = time.monotonic()
            alone = writers.rate(now - 3, now)
            cluster.rejoin(next(n for n in cluster.nodes if n.process.poll() is not None))
            time.sleep(3)
            now = time.monotonic()
            after = writers.rate(now - 3, now)
            rows.append((writable, back))
            print(f"kill {k + 1}: DSN writable after {writable:5.2f} s, every writer back after "
                  f"{back:5.2f} s; appends/s before {before:5.0f}, promoted primary alone "
                  f"{alone:5.0f}, after rejoin {after:5.0f}", flush=True)  # fmt: skip
    finally:
        writers.close()
    if writers.strange:
        print("NOT sqlmem errors:", writers.strange[:3])
    backs = sorted(b for _, b in rows)
    print(f"failover over {len(rows)} kills: every writer back after min {backs[0]:.2f} s, "
          f"median {statistics.median(backs):.2f} s, max {backs[-1]:.2f} s")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=5)
    args = parser.parse_args(argv)
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)  # its reconnect notes
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import pgserver
    from pgcluster import AutoFailoverCluster, PgBouncer

    server = pgserver.start()
    bouncer = cluster = None
    try:
        bouncer = PgBouncer.start(str(server.socket_dir), server.port, pool_size=20)
        cluster = AutoFailoverCluster.start()
        print(f"{FACTS} facts per agent; appends: 1 thread x {APPENDS // 2}, 4 threads x "
              f"{APPENDS // 8}", flush=True)  # fmt: skip
        measure("one server", server.dsn)
        measure("PgBouncer (txn pool)", bouncer.dsn, transaction_pooler=True)
        measure("cluster (sync standby)", cluster.dsn())
        if args.kills:
            failovers(cluster, args.kills)
    finally:
        if cluster is not None:
            cluster.stop()
        if bouncer is not None:
            bouncer.stop()
        server.stop()


if __name__ == "__main__":
    main()
