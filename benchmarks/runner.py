"""`python -m benchmarks`: every workload, grouped, against raw apsw and the peers.

    python -m benchmarks                      # everything, full sizes, 3 runs
    python -m benchmarks --quick --runs 1     # small sizes, a minute or two
    python -m benchmarks --only W2,peers      # workload ids or group names
    python -m benchmarks --load 2             # 2 busy processes during the measurement
    python -m benchmarks --json r.json --chart r.svg

`--only W3p` adds the mode "any" prototypes, which the default run leaves out. The
workloads are listed in `registry.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .context import SIZES, Context
from .data import Corpus
from .harness import Row, background_load
from .registry import GROUPS, REGISTRY, Entry, run_entry
from .report import environment, markdown, write_results

__all__ = ["main", "merge_runs"]

SEED = 20240601


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="sqlmem against raw apsw and the peers users would pick, in one process.",
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small sizes (a minute or two)")
    size.add_argument("--smoke", action="store_true", help="tiny sizes, for the test suite")
    parser.add_argument("--only", default="",
                        help="comma-separated workload ids or group names "
                             f"({', '.join(GROUPS)})")  # fmt: skip
    parser.add_argument("--runs", type=int, default=3,
                        help="runs of every workload; rows show the range (default 3)")  # fmt: skip
    parser.add_argument("--load", type=int, default=0, metavar="N",
                        help="N busy background processes during the measurement")  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"),
                        help="folder for results.md and results.json")  # fmt: skip
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    parser.add_argument("--chart", type=Path, default=None, help="write an SVG chart here")
    parser.add_argument("--w6-seconds", type=float, default=None,
                        help="W6 seconds per side (default 10; 30 for the long run)")  # fmt: skip
    parser.add_argument("--tmp", type=Path, default=None, help="where databases are made")
    parser.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.load < 0:
        parser.error("--runs must be >= 1 and --load >= 0")
    return args


def select(only: str) -> list[Entry]:
    """The entries named by workload id or group name (any case), in registry order."""
    if not only:
        return [e for e in REGISTRY if not e.opt_in]
    ids = {e.id.lower(): e.id for e in REGISTRY}
    groups = {g.lower(): members for g, members in GROUPS.items()}
    chosen: set[str] = set()
    for part in only.split(","):
        key = part.strip().lower()
        if key in ids:
            chosen.add(ids[key])
        elif key in groups:
            chosen.update(i for i in groups[key] if not _entry(i).opt_in)
        elif key:
            raise SystemExit(
                f"unknown workload or group {part!r}; workloads: "
                f"{', '.join(e.id for e in REGISTRY)}; groups: {', '.join(GROUPS)}"
            )
    return [e for e in REGISTRY if e.id in chosen]


def _entry(id_: str) -> Entry:
    return next(e for e in REGISTRY if e.id == id_)


def merge_runs(runs: list[list[Row]]) -> list[Row]:
    """One row per (workload, metric): medians over the runs, with the ranges in
    `extra` ("ratio_range", "peer_ratio_range") and how many runs passed."""
    keyed: dict[tuple[str, str], list[Row]] = {}
    for rows in runs:
        for row in rows:
            keyed.setdefault((row.workload, row.metric), []).append(row)
    merged = []
    for same in keyed.values():
        first = same[0]
        row = dataclasses.replace(first, extra=dict(first.extra))
        if len(same) > 1 and first.skipped is None:
            row.sqlmem = _median([r.sqlmem for r in same])
            row.raw = _median([r.raw for r in same])
            row.ratio = _median_opt([r.ratio for r in same])
            row.peer = _median_opt([r.peer for r in same])
            row.peer_ratio = _median_opt([r.peer_ratio for r in same])
            failed = [r.failed_condition for r in same if r.failed_condition]
            row.failed_condition = failed[0] if failed else None
        row.extra["runs"] = len(same)
        row.extra["ratio_range"] = _range([r.ratio for r in same])
        row.extra["peer_ratio_range"] = _range([r.peer_ratio for r in same])
        row.extra["runs_passed"] = sum(r.status == "PASS" for r in same)
        merged.append(row)
    return merged


def _median(values: list[float]) -> float:
    finite = [v for v in values if v == v]
    return statistics.median(finite) if finite else float("nan")


def _median_opt(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None and v == v]
    return statistics.median(present) if present else None


def _range(values: list[float | None]) -> list[float] | None:
    present = [v for v in values if v is not None and v == v]
    return [min(present), max(present)] if present else None


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def _measure(
    ctx: Context, entries: list[Entry], runs: int, base: Path
) -> tuple[list[list[Row]], dict[str, float]]:
    all_runs: list[list[Row]] = []
    timings: dict[str, float] = {}
    for r in range(runs):
        # Each run writes its own databases (appends must start from empty files); the
        # big read-only databases (history, facts) are built once and cached in `ctx`.
        ctx.tmp = base / f"run{r + 1}"
        ctx.tmp.mkdir(parents=True, exist_ok=True)
        rows: list[Row] = []
        for entry in entries:
            ctx.settle()
            ctx.log(f"run {r + 1}/{runs}: {entry.id} ...")
            t0 = time.monotonic()
            found = run_entry(entry, ctx)
            rows += found
            timings[entry.id] = round(timings.get(entry.id, 0.0) + time.monotonic() - t0, 2)
            if found and found[0].skipped:
                ctx.log(f"{entry.id} skipped: {found[0].skipped}")
        all_runs.append(rows)
        if all(row.skipped for row in rows):
            break  # nothing measurable here: more runs would only repeat the skips
    return all_runs, timings


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    # A terminated run still stops its load processes and removes its databases.
    signal.signal(signal.SIGTERM, _terminated)
    size = "smoke" if args.smoke else "quick" if args.quick else "full"
    sizes = SIZES[size]
    if args.w6_seconds is not None:
        sizes = dataclasses.replace(sizes, w6_seconds=args.w6_seconds)
    entries = select(args.only)
    base = Path(tempfile.mkdtemp(prefix="sqlmem-bench-", dir=args.tmp))
    started = time.monotonic()
    ctx = Context(sizes, Corpus(SEED), base, verbose=not args.quiet)
    try:
        env = environment(base)
        load_before = _loadavg()
        with background_load(args.load, base) as pids:
            all_runs, timings = _measure(ctx, entries, args.runs, base)
        rows = merge_runs(all_runs)
        meta: dict[str, Any] = {
            "size": size,
            "seed": SEED,
            "workloads": [e.id for e in entries],
            "runs": args.runs,
            "load": args.load,
            "load_pids": pids,
            "loadavg_before": load_before,
            "loadavg_after": _loadavg(),
            "command": " ".join(["python -m benchmarks", *(argv or sys.argv[1:])]),
            "sizes": ctx.sizes_dict(),
            "seconds": time.monotonic() - started,
            "workload_seconds": timings,
            "tmp": str(base),
        }
        md, js = write_results(args.out, env, meta, rows, json_path=args.json)
        if args.chart is not None:
            from .chart import write_chart

            write_chart(args.chart, rows, title=_chart_title(env, meta))
        print(markdown(env, meta, rows))
        if not args.quiet:
            print(f"written: {md} and {js}", file=sys.stderr)
    finally:
        _close_cached(ctx)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _chart_title(env: dict[str, Any], meta: dict[str, Any]) -> str:
    load = f", --load {meta['load']}" if meta["load"] else ""
    return (f"sqlmem {env['sqlmem']} ({env['commit']}), {meta['size']} sizes, "
            f"{meta['runs']} runs{load}, {os.cpu_count()} CPUs")  # fmt: skip


def _close_cached(ctx: Context) -> None:
    for pair in (ctx.cache or {}).values():
        for item in pair:
            with contextlib.suppress(Exception):
                item.close()
