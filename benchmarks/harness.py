"""Timing, round-robin scheduling, statistics and result rows.

Every comparison interleaves its variants, with the first one rotating: throughput in
alternating rounds, latency call by call (the variants take turns, each on its own input),
so machine drift and a noisy neighbour hit both sides alike; figures are medians of the
rounds (throughput) or percentiles of all samples (latency). Ratios are always "sqlmem
cost / raw cost": 1.0 means as fast as raw apsw, 2.0 means twice the time per operation.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from time import perf_counter_ns
from typing import Any


class Skip(Exception):
    """Raised by a workload that cannot run here (no server, an optional peer missing):
    the runner reports its rows as skipped, with this reason, and goes on."""


__all__ = [
    "Row",
    "Skip",
    "background_load",
    "latency_interleaved",
    "percentile",
    "throughput_rounds",
]


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation; nan when empty."""
    if not samples:
        return math.nan
    data = sorted(samples)
    k = (len(data) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def _rotate(items: Sequence[str], r: int) -> list[str]:
    r %= len(items)
    return list(items[r:]) + list(items[:r])


def throughput_rounds(
    variants: dict[str, Callable[[int], int]], rounds: int
) -> dict[str, list[float]]:
    """Call each variant's `run(round) -> operations done` once per round, alternating.

    Returns the operations per second of every round, per variant.
    """
    rates: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for r in range(rounds):
        for name in _rotate(names, r):
            start = perf_counter_ns()
            ops = variants[name](r)
            elapsed = perf_counter_ns() - start
            rates[name].append(ops / (elapsed / 1e9))
    return rates


def latency_interleaved(
    variants: dict[str, Callable[[Any], Any]],
    inputs: Sequence[Any],
    collect: dict[str, list[Any]] | None = None,
) -> dict[str, list[float]]:
    """Time each call `fn(input)` in microseconds; every variant gets every input once.

    The variants take turns call by call, the first one rotating: the machine is shared,
    and a burst of load (lasting ms to s) must not land on one side's block of calls.
    At each turn the variants work on inputs far apart (variant k on input i + k * n/v),
    never on the same one: a query just run by a variant reading the same file (sqlmem's
    "all" then "any", raw AND then OR) would find its pages cached, ~10-20% off its time.
    With `collect`, results are kept per variant in input order (for agreement checks).
    """
    samples: dict[str, list[float]] = {name: [] for name in variants}
    kept: dict[str, list[Any]] = {name: [None] * len(inputs) for name in variants}
    n = len(inputs)
    stride = max(1, n // max(1, len(variants)))
    offsets = {name: k * stride for k, name in enumerate(variants)}
    names = list(variants)
    for i in range(n):
        for name in _rotate(names, i):
            j = (i + offsets[name]) % n
            fn = variants[name]
            start = perf_counter_ns()
            result = fn(inputs[j])
            samples[name].append((perf_counter_ns() - start) / 1000)
            # Results are kept only when asked for: thousands of live result lists would
            # make the garbage collector's walks part of every later call's time.
            if collect is not None:
                kept[name][j] = result
    if collect is not None:
        collect.update(kept)
    return samples


@dataclass
class Row:
    """One line of the results table."""

    workload: str
    metric: str
    sqlmem: float
    raw: float
    #: "sqlmem cost / raw cost" (time per op, or latency), None when not comparable.
    ratio: float | None
    target: str = "report"
    #: The ratio limit, None for report-only rows.
    limit: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: Overrides PASS/FAIL when a non-ratio condition (e.g. agreement) fails.
    failed_condition: str | None = None
    #: The fastest peer (another library doing the same work) in the same run: its
    #: figure in the row's metric, its name, and "sqlmem cost / that peer's cost".
    peer: float | None = None
    peer_name: str | None = None
    peer_ratio: float | None = None
    #: The limit on `peer_ratio` (1.0 = at least as fast as the best peer), or None.
    peer_limit: float | None = None
    #: Set by the runner: the workload's group, and why the row was not measured.
    group: str = ""
    skipped: str | None = None

    @property
    def status(self) -> str:
        if self.skipped is not None:
            return "skipped"
        if self.failed_condition is not None:
            return "FAIL"
        limits = [(self.ratio, self.limit), (self.peer_ratio, self.peer_limit)]
        judged = [(r, lim) for r, lim in limits if lim is not None and r is not None]
        if not judged:
            return "report"
        return "FAIL" if any(r > lim for r, lim in judged) else "PASS"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status
        return data


def with_peers(row: Row, peers: dict[str, float], *, rate: bool, limit: float | None) -> Row:
    """Attach the best of `peers` ({name: figure in the row's metric}) to `row`.

    `rate`: figures are operations per second (higher is better), else a time (lower is
    better). Peers that could not run are simply absent; with none, the row has no peer.
    """
    found = {name: v for name, v in peers.items() if v == v and v > 0}  # drop nan, zero
    if not found:
        return row
    pick = max if rate else min
    name = pick(found, key=lambda n: found[n])
    best = found[name]
    row.peer, row.peer_name, row.peer_limit = best, name, limit
    row.peer_ratio = (best / row.sqlmem if rate else row.sqlmem / best) if row.sqlmem else None
    row.extra["peers"] = dict(found)
    return row


#: A busy neighbour (`--load N`): a pure-Python spin loop holding one core, with 1 MB
#: written and fsynced about ten times a second, so the disk's queue is shared too.
_LOAD_CODE = """
import os, sys
buf = os.urandom(1 << 20)
with open(sys.argv[1], "wb") as f:
    n = 0
    while True:
        x = 0
        for k in range(100_000):
            x += k * k
        n += 1
        if n % 10 == 0:
            f.seek(0)
            f.write(buf)
            f.flush()
            os.fsync(f.fileno())
"""


@contextlib.contextmanager
def background_load(count: int, folder: Path) -> Iterator[list[int]]:
    """Run `count` busy processes for the duration of the block; yields their pids.

    They are started before the measurement and stopped (terminated, then killed if
    they linger) after it, whatever happens inside."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(count):
            procs.append(subprocess.Popen(
                [sys.executable, "-c", _LOAD_CODE, str(folder / f"load-{i}.bin")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            ))  # fmt: skip
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def cost_ratio_rate(sqlmem_rate: float, raw_rate: float) -> float:
    """Time per operation ratio from two rates."""
    return raw_rate / sqlmem_rate if sqlmem_rate else math.inf


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan
