"""How sqlmem's costs grow with the work: `python -m benchmarks.curves --help`.

Each size is measured in one process, sqlmem beside raw apsw on the same data (ratios
within a run are what to compare on a shared machine). Sizes are selectable, since a
million facts takes long to build; the chart (SVG, log-log, one panel per curve) is
written by hand like `benchmarks.chart`, with no plotting dependency.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import random
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from html import escape
from pathlib import Path
from typing import Any

import sqlmem
from sqlmem.embedders.hashing import HashEmbedder
from sqlmem.factory import MemoryFactory
from sqlmem.sqlite.core.migrations import latest_version

from .curves_writers import appends_by_writers, postgres_server
from .raw import SEARCH, SEARCH_MESSAGES, RawFacts, RawHistory, match_expr

__all__ = ["main"]

_WORDS = [f"w{i}" for i in range(5000)]  # a Zipf-like vocabulary: w0 is the most common
# Cumulated once: `choices(weights=...)` sums all 5,000 weights again on every call,
# which made building a million texts take most of an hour.
_CUM_WEIGHTS = list(itertools.accumulate(1 / (i + 1) for i in range(len(_WORDS))))
Curves = dict[str, dict[str, list[tuple[int, float]]]]


def _text(rng: random.Random, words: int = 12) -> str:
    return " ".join(rng.choices(_WORDS, cum_weights=_CUM_WEIGHTS, k=words))


def _p50_us(call: Callable[[], Any], inputs: int = 200) -> float:
    call()
    times = []
    for _ in range(inputs):
        start = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - start)
    times.sort()
    return times[len(times) // 2] / 1000


def _queries(rng: random.Random) -> list[str]:
    return [" ".join(rng.sample(_WORDS[20:400], 2)) for _ in range(50)]


def _fact_sides(
    db: sqlmem.MemoryDB, raw: RawFacts, queries: Iterator[str]
) -> dict[str, Callable[[], Any]]:
    def raw_search(joiner: str) -> Any:
        return raw.conn.execute(SEARCH, (match_expr(next(queries), joiner), 10)).fetchall()

    return {
        "sqlmem all": lambda: db.facts.search(next(queries), 10, mode="all"),
        "sqlmem any": lambda: db.facts.search(next(queries), 10, mode="any"),
        "sqlmem hybrid": lambda: db.facts.search(next(queries), 10, mode="hybrid"),
        "raw AND": lambda: raw_search("AND"),
        "raw OR": lambda: raw_search("OR"),
    }


def _history_sides(
    db: sqlmem.MemoryDB, raw: RawHistory, queries: Iterator[str]
) -> dict[str, Callable[[], Any]]:
    def raw_search() -> Any:
        expr = match_expr(next(queries), "OR")
        return raw.conn.execute(SEARCH_MESSAGES, (expr, 10)).fetchall()

    return {
        "sqlmem get_recent(50)": lambda: db.history.get_recent("chat:1", 50),
        "raw get_recent(50)": lambda: raw.get_recent("chat:1", 50),
        "sqlmem history search": lambda: db.history.search(next(queries), top_k=10),
        "raw history search (OR)": raw_search,
    }


#: Stores of at least this many rows are built once and kept in the cache folder
#: (`--cache`): a million facts takes minutes to build, and the same rows serve every run.
CACHE_FROM = 1_000_000


def _built(path: Path, build: Callable[[Path], None]) -> Path:
    """`path`, built by `build` unless it is there already. Built under another name and
    renamed when complete, so an interrupted build is never taken for a finished one."""
    if path.exists():
        return path
    partial = path.with_name(path.name + ".partial")
    for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        leftover.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    build(partial)
    partial.replace(path)
    return path


def _home(size: int, folder: Path, cache: Path | None) -> Path:
    return cache if cache is not None and size >= CACHE_FROM else folder


def _fact_stores(size: int, home: Path) -> tuple[Path, Path]:
    """sqlmem's and raw's files of `size` facts (the same texts, seeded by the size)."""
    rng = random.Random(size)
    texts = [_text(rng) for _ in range(size)]

    def build_sqlmem(path: Path) -> None:
        with sqlmem.open(path, embedder=HashEmbedder(64)) as db:
            for start in range(0, size, 1000):
                chunk = texts[start : start + 1000]
                db.facts.index_many(
                    [sqlmem.Fact(id=f"f{start + i}", content=t) for i, t in enumerate(chunk)]
                )

    def build_raw(path: Path) -> None:
        raw = RawFacts(path)
        for start in range(0, size, 1000):
            chunk = texts[start : start + 1000]
            raw.index_many([(f"f{start + i}", t, "", "[]", 1, 1) for i, t in enumerate(chunk)])
        raw.close()

    version = latest_version()
    return (
        _built(home / f"facts-{size}-v{version}.db", build_sqlmem),
        _built(home / f"raw-facts-{size}.db", build_raw),
    )


def fact_search(
    sizes: list[int], folder: Path, cache: Path | None = None
) -> dict[str, list[tuple[int, float]]]:
    """p50 µs of a 2-word query, top 10: sqlmem "all" / "any" / hybrid, raw AND / OR."""
    out: dict[str, list[tuple[int, float]]] = {}
    for size in sizes:
        sqlmem_path, raw_path = _fact_stores(size, _home(size, folder, cache))
        db = sqlmem.open(sqlmem_path, embedder=HashEmbedder(64))
        raw = RawFacts(raw_path)
        sides = _fact_sides(db, raw, iter(_queries(random.Random(size)) * 1000))
        for name, call in sides.items():
            out.setdefault(name, []).append((size, _p50_us(call, 100)))
        db.close()
        raw.close()
    return out


def _history_stores(size: int, home: Path) -> tuple[Path, Path]:
    """sqlmem's and raw's files of one session of `size` messages (the same texts)."""
    rng = random.Random(size)
    texts = [_text(rng) for _ in range(size)]

    def build_sqlmem(path: Path) -> None:
        with sqlmem.open(path) as db:
            for start in range(0, size, 1000):
                chunk = texts[start : start + 1000]
                db.history.append_many(
                    "chat:1", [sqlmem.Message(role="user", content=t) for t in chunk]
                )

    def build_raw(path: Path) -> None:
        raw = RawHistory(path, fts=True)
        for start in range(0, size, 1000):
            raw.append_many("chat:1", [("user", t) for t in texts[start : start + 1000]], 1)
        raw.close()

    version = latest_version()
    return (
        _built(home / f"history-{size}-v{version}.db", build_sqlmem),
        _built(home / f"raw-history-{size}.db", build_raw),
    )


def history(
    sizes: list[int], folder: Path, cache: Path | None = None
) -> dict[str, list[tuple[int, float]]]:
    """p50 µs of get_recent(50) and of a 2-word history search, one session of `size`."""
    out: dict[str, list[tuple[int, float]]] = {}
    for size in sizes:
        sqlmem_path, raw_path = _history_stores(size, _home(size, folder, cache))
        db = sqlmem.open(sqlmem_path)
        raw = RawHistory(raw_path, fts=True)
        sides = _history_sides(db, raw, iter(_queries(random.Random(size)) * 1000))
        for name, call in sides.items():
            out.setdefault(name, []).append((size, _p50_us(call)))
        db.close()
        raw.close()
    return out


def factory_open(sizes: list[int], folder: Path) -> dict[str, list[tuple[int, float]]]:
    """ms per agent to resolve (create) `size` agents through one MemoryFactory, and the
    process's peak RSS in MB afterwards (each size in a fresh factory and folder)."""
    out: dict[str, list[tuple[int, float]]] = {}
    message = sqlmem.Message(role="user", content="hello")
    for size in sizes:
        start = time.perf_counter()
        with MemoryFactory(folder / f"agents-{size}") as memory:
            for i in range(size):
                history = memory.resolve_history(f"agent-{i}")
                assert history is not None
                history.append("chat:1", message)
            elapsed = time.perf_counter() - start
            rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out.setdefault("factory ms/agent", []).append((size, elapsed * 1000 / size))
        out.setdefault("peak RSS MB", []).append((size, rss_mb))
        shutil.rmtree(folder / f"agents-{size}", ignore_errors=True)
    return out


# -- chart ------------------------------------------------------------------------------

_W, _H, _PAD = 420, 260, 60
_COLOURS = ["#3b6ea8", "#e08a2c", "#2e7d32", "#c62828", "#6a1b9a", "#00838f"]


def _scale(values: list[float]) -> tuple[float, float]:
    import math

    lo, hi = math.log10(min(values)), math.log10(max(values))
    return (lo, hi) if hi > lo else (lo - 0.5, hi + 0.5)


def _panel(x0: float, title: str, series: dict[str, list[tuple[int, float]]]) -> list[str]:
    import math

    xs, ys = (
        _scale([x for s in series.values() for x, _ in s]),
        _scale([y for s in series.values() for _, y in s]),
    )

    def at(x: float, y: float) -> tuple[float, float]:
        px = x0 + _PAD + (_W - 2 * _PAD) * (math.log10(x) - xs[0]) / (xs[1] - xs[0])
        py = _PAD - 20 + (_H - 2 * _PAD) * (1 - (math.log10(y) - ys[0]) / (ys[1] - ys[0]))
        return px, py

    parts = [f'<text x="{x0 + _PAD}" y="24" font-weight="bold">{escape(title)}</text>']
    parts.append(
        f'<rect x="{x0 + _PAD}" y="{_PAD - 20}" width="{_W - 2 * _PAD}" '
        f'height="{_H - 2 * _PAD}" fill="none" stroke="#999"/>'
    )
    for i, (name, points) in enumerate(series.items()):
        colour = _COLOURS[i % len(_COLOURS)]
        coords = [at(x, y) for x, y in points]
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in coords)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for (_, y), (px, py) in zip(points, coords, strict=True):
            parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}"/>')
            parts.append(f'<text x="{px + 4:.1f}" y="{py - 4:.1f}" font-size="9">{y:.3g}</text>')
        parts.append(
            f'<text x="{x0 + _PAD}" y="{_H + 10 + 14 * i}" fill="{colour}" font-size="11">'
            f"{escape(name)}</text>"
        )
    for x in sorted({x for s in series.values() for x, _ in s}):
        px, _ = at(x, 10 ** ys[0])
        parts.append(
            f'<text x="{px:.1f}" y="{_H - _PAD - 6}" font-size="10" text-anchor="middle">'
            f"{x:,}</text>"
        )
    return parts


def write_svg(path: Path, curves: Curves) -> Path:
    panels = [(title, series) for title, series in curves.items() if series]
    legend = max((len(s) for _, s in panels), default=0)
    width, height = _W * max(1, len(panels)), _H + 20 + 14 * legend
    body: list[str] = []
    for i, (title, series) in enumerate(panels):
        body += _panel(i * _W, title, series)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">'
        f'<rect width="100%" height="100%" fill="white"/>{"".join(body)}</svg>\n',
        encoding="utf-8",
    )
    return path


def _sizes(text: str) -> list[int]:
    return [int(part.replace("_", "")) for part in text.split(",") if part.strip()]


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.curves", description=__doc__)
    parser.add_argument(
        "--facts", default="10000,100000", help="fact counts (e.g. 10000,100000,1000000)"
    )
    parser.add_argument("--messages", default="1000,100000", help="messages in one session")
    parser.add_argument("--agents", default="10,1000,10000", help="agents opened through a factory")
    parser.add_argument("--writers", default="1,2,4,8", help="writer processes on one store")
    parser.add_argument(
        "--writer-seconds", type=float, default=3.0, help="how long each writer appends"
    )
    parser.add_argument(
        "--million", action="store_true", help="add 1,000,000 to --facts and --messages"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "sqlmem-curves-cache",
        help=f"where stores of {CACHE_FROM:,} rows or more are built once and kept",
    )
    postgres = parser.add_mutually_exclusive_group()
    postgres.add_argument(
        "--postgres", action="store_true", help="writers on a throwaway PostgreSQL server too"
    )
    postgres.add_argument("--postgres-dsn", help="writers on this PostgreSQL database too")
    parser.add_argument(
        "--redraw",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="measure nothing: draw the chart from figures kept with --json (merged)",
    )
    parser.add_argument("--svg", type=Path, default=Path("docs/assets/scaling.svg"))
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--tmp", type=Path, help="where databases are made")
    args = parser.parse_args(argv)
    if args.million:
        args.facts += ",1000000"
        args.messages += ",1000000"
    return args


def merged(files: list[Path]) -> Curves:
    """The figures of several runs kept with --json, one chart: a series' points from
    every file, by size (a later file's point replaces an earlier one at the same size)."""
    curves: Curves = {}
    for file in files:
        for title, series in json.loads(file.read_text(encoding="utf-8")).items():
            for name, points in series.items():
                kept = dict(curves.setdefault(title, {}).get(name, []))
                kept.update((int(x), float(y)) for x, y in points)
                curves[title][name] = sorted(kept.items())
    return curves


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.redraw:
        write_svg(args.svg, merged(args.redraw))
        return 0
    with contextlib.ExitStack() as stack:
        folder = Path(
            stack.enter_context(tempfile.TemporaryDirectory(dir=args.tmp, prefix="sqlmem-curves-"))
        )
        dsn = args.postgres_dsn
        if args.postgres:
            dsn = stack.enter_context(postgres_server())
        # Factory first: the RSS it reports is the process's peak so far.
        opened = factory_open(_sizes(args.agents), folder)
        curves: Curves = {
            "fact search p50 µs (x: facts)": fact_search(_sizes(args.facts), folder, args.cache),
            "history p50 µs (x: messages)": history(_sizes(args.messages), folder, args.cache),
            "factory open (x: agents)": opened,
            "appends/s (x: writer processes)": appends_by_writers(
                _sizes(args.writers), folder, args.writer_seconds, dsn
            ),
        }
    for title, series in curves.items():
        print(f"## {title}")
        for name, points in series.items():
            print(f"- {name}: " + ", ".join(f"{x:,}: {y:.4g}" for x, y in points))
    write_svg(args.svg, curves)
    if args.json:
        args.json.write_text(json.dumps(curves, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
