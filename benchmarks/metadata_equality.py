"""`search_by_metadata(key, value, limit=10)` beside raw apsw on the same file:
`python -m benchmarks.metadata_equality [--facts N] [--tmp DIR]`.

One sqlmem file of N facts (default 50,000), one fact in 50 tagged `{"kind": "note"}`, the
others `{"kind": "chat"}` plus a few other keys; the call asks for the newest 10 notes.
Raw is the query an expert writes over the same table (`json_extract` of the key, newest
first by created_at, LIMIT 10), on its own apsw connection to the same file, returning
plain tuples. p50 of 300 calls each, interleaved, so both see the same machine load.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlmem

from .raw import connect

__all__ = ["main"]

_RAW = (
    "SELECT id, content, source, category, tags, metadata, created_at, updated_at FROM facts"
    " WHERE json_extract(metadata, '$.kind') = ? ORDER BY created_at DESC, pk DESC LIMIT 10"
)


def _p50_pair(a: Callable[[], Any], b: Callable[[], Any], runs: int = 300) -> tuple[float, float]:
    a(), b()
    times: tuple[list[int], list[int]] = ([], [])
    for _ in range(runs):
        for call, out in ((a, times[0]), (b, times[1])):
            start = time.perf_counter_ns()
            call()
            out.append(time.perf_counter_ns() - start)
    return tuple(sorted(t)[len(t) // 2] / 1000 for t in times)  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=50_000)
    parser.add_argument("--tmp", default=None, help="folder for the database (tmpfs is steadier)")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(dir=args.tmp))
    with sqlmem.open(folder / "m.db") as db:
        facts = [
            sqlmem.Fact(
                id=f"f{i}",
                content=f"fact number {i}",
                metadata={"kind": "note" if i % 50 == 0 else "chat", "n": i, "ok": i % 2 == 0},
            )
            for i in range(args.facts)
        ]
        for start in range(0, len(facts), 1000):
            db.facts.index_many(facts[start : start + 1000])
        raw = connect(folder / "m.db")
        sqlmem_us, raw_us = _p50_pair(
            lambda: db.facts.search_by_metadata("kind", "note", limit=10),
            lambda: raw.execute(_RAW, ("note",)).fetchall(),
        )
        assert [f.id for f in db.facts.search_by_metadata("kind", "note", limit=10)] == [
            r[0] for r in raw.execute(_RAW, ("note",)).fetchall()
        ]
        raw.close()
    print(
        f"search_by_metadata limit=10, {args.facts:,} facts, 1 in 50 matching: "
        f"sqlmem {sqlmem_us:.0f} µs, raw {raw_us:.0f} µs, ratio {sqlmem_us / raw_us:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
