"""`python -m benchmarks [--quick | --smoke] [--only W1,W3] [--out DIR] [--w6-seconds 30]`.

`--only W3p` adds the mode "any" prototypes, which the default run leaves out.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from .context import SIZES, Context
from .context_workloads import w8_memory_pack, w9_context_window
from .data import Corpus
from .doc_workloads import w7_documents
from .fact_workloads import (
    w3_fact_search,
    w3b_filtered_search,
    w3c_index_facts,
    w3m_metadata_search,
    w3p_any_prototypes,
)
from .harness import Row
from .history_workloads import w1_append, w1b_append_many, w2_get_recent, w5_history_search
from .item_workloads import w3d_remember
from .other_workloads import w4_open_agents, w6_mixed
from .report import environment, markdown, write_results

__all__ = ["WORKLOADS", "main"]

WORKLOADS: dict[str, Callable[[Context], list[Row]]] = {
    "W1": w1_append,
    "W1b": w1b_append_many,
    "W2": w2_get_recent,
    "W3": w3_fact_search,
    "W3p": w3p_any_prototypes,
    "W3b": w3b_filtered_search,
    "W3m": w3m_metadata_search,
    "W3c": w3c_index_facts,
    "W3d": w3d_remember,
    "W4": w4_open_agents,
    "W5": w5_history_search,
    "W6": w6_mixed,
    "W7": w7_documents,
    "W8": w8_memory_pack,
    "W9": w9_context_window,
}

#: Run only when named in --only: the designs weighed for mode "any", already decided.
OPT_IN = {"W3p"}

SEED = 20240601


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="sqlmem against raw apsw on the same data, in one process.",
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small sizes (well under 30 s)")
    size.add_argument("--smoke", action="store_true", help="tiny sizes, for the test suite")
    parser.add_argument("--only", default="", help="comma-separated workloads, e.g. W1,W3")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"),
                        help="folder for results.md and results.json")  # fmt: skip
    parser.add_argument("--w6-seconds", type=float, default=None,
                        help="W6 seconds per side (default 10; 30 for the long run)")  # fmt: skip
    parser.add_argument("--tmp", type=Path, default=None, help="where databases are made")
    parser.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return parser.parse_args(argv)


def _selected(only: str) -> list[str]:
    if not only:
        return [n for n in WORKLOADS if n not in OPT_IN]
    names = {n.lower(): n for n in WORKLOADS}
    chosen = []
    for part in only.split(","):
        key = part.strip().lower()
        if key not in names:
            raise SystemExit(f"unknown workload {part!r}; choose from {', '.join(WORKLOADS)}")
        chosen.append(names[key])
    return [n for n in WORKLOADS if n in chosen]


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    size = "smoke" if args.smoke else "quick" if args.quick else "full"
    sizes = SIZES[size]
    if args.w6_seconds is not None:
        sizes = dataclasses.replace(sizes, w6_seconds=args.w6_seconds)
    names = _selected(args.only)
    tmp = Path(tempfile.mkdtemp(prefix="sqlmem-bench-", dir=args.tmp))
    started = time.monotonic()
    ctx = Context(sizes, Corpus(SEED), tmp, verbose=not args.quiet)
    try:
        env = environment(tmp)
        rows: list[Row] = []
        timings: dict[str, float] = {}
        for name in names:
            ctx.settle()
            ctx.log(f"{name} ...")
            t0 = time.monotonic()
            rows += WORKLOADS[name](ctx)
            timings[name] = round(time.monotonic() - t0, 2)
            ctx.log(f"{name} done in {timings[name]:.1f} s")
        meta = {
            "size": size,
            "seed": SEED,
            "workloads": names,
            "sizes": ctx.sizes_dict(),
            "seconds": time.monotonic() - started,
            "workload_seconds": timings,
            "tmp": str(tmp),
        }
        md, js = write_results(args.out, env, meta, rows)
        print(markdown(env, meta, rows))
        if not args.quiet:
            print(f"written: {md} and {js}", file=sys.stderr)
    finally:
        _close_cached(ctx)
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _close_cached(ctx: Context) -> None:
    for pair in (ctx.cache or {}).values():
        for item in pair:
            with contextlib.suppress(Exception):
                item.close()
