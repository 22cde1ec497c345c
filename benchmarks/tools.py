"""Memory tools and MCP (issue 18): what `MemoryTools.call` and an MCP round trip cost.

    python -m benchmarks.tools                 # 20,000 facts, 1,000 queries, 300 MCP calls
    python -m benchmarks.tools --facts 2000 --queries 200 --mcp-calls 100

Not part of the main runner (it needs the `mcp` extra for its second half):

- T1: `tools.call("search_memory", '{"query": q, "top_k": 10}')` (JSON text, as a model
  sends it) against the direct `facts.search(q, 10)` plus encoding the same result as
  JSON (the floor any tool layer pays). Called alternately, call by call, on one file;
  target (issue 18): p50 ratio <= 1.3.
- T2: an MCP round trip for `search_memory` on the demo database (`sqlmem demo`), with
  the official SDK's stdio client against `python -m sqlmem mcp PATH`; target p50 < 5 ms.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlmem

from .data import Corpus
from .harness import percentile

SEED = 20240601


def _encoded_search(db: sqlmem.MemoryDB, query: str) -> str:
    found = db.facts.search(query, 10)
    items = [
        {
            "id": f.id,
            "content": f.content,
            "category": f.category,
            "tags": f.tags,
            "layer": f.layer,
            "score": f.score,
        }
        for f in found
    ]
    return json.dumps({"results": items}, ensure_ascii=False, separators=(",", ":"))


def t1_call_overhead(folder: Path, facts: int, queries: int) -> dict[str, Any]:
    corpus = Corpus(SEED)
    db = sqlmem.open(folder / "t1.db")
    try:
        rows = corpus.facts(facts, seed=1)
        db.facts.index_many(
            sqlmem.Fact(id=r.id, content=r.content, tags=[r.tag], category=r.category) for r in rows
        )
        tools = sqlmem.MemoryTools(db)
        asked = [q for q, _ in corpus.queries(queries, seed=2)]
        texts = [json.dumps({"query": q, "top_k": 10}) for q in asked]
        for q, t in zip(asked[:50], texts[:50], strict=True):  # warm the caches
            db.facts.search(q, 10)
            tools.call("search_memory", t)
        direct: list[float] = []
        encoded: list[float] = []
        called: list[float] = []
        for i, (q, t) in enumerate(zip(asked, texts, strict=True)):
            order = (0, 1, 2)[i % 3 :] + (0, 1, 2)[: i % 3]  # the first one rotates
            for which in order:
                started = time.perf_counter()
                if which == 0:
                    db.facts.search(q, 10)
                elif which == 1:
                    _encoded_search(db, q)
                else:
                    tools.call("search_memory", t)
                (direct, encoded, called)[which].append(time.perf_counter() - started)
        same = all(
            json.loads(tools.call("search_memory", t)) == json.loads(_encoded_search(db, q))
            for q, t in zip(asked[:100], texts[:100], strict=True)
        )
    finally:
        db.close()
    p50 = {
        name: percentile(xs, 50) * 1e6
        for name, xs in (("search", direct), ("search+json", encoded), ("call", called))
    }
    return {
        "facts": facts,
        "queries": queries,
        "p50_us": {k: round(v, 1) for k, v in p50.items()},
        "p99_call_us": round(percentile(called, 99) * 1e6, 1),
        "ratio_call_vs_search_json": round(p50["call"] / p50["search+json"], 3),
        "ratio_call_vs_search": round(p50["call"] / p50["search"], 3),
        "same_results": same,
    }


def t2_mcp_round_trip(folder: Path, calls: int) -> dict[str, Any]:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    subprocess.run(
        [sys.executable, "-m", "sqlmem", "demo", str(folder / "demo")],
        check=True,
        capture_output=True,
    )
    (path,) = (folder / "demo").rglob("memory.db")
    samples: list[float] = []

    async def main() -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "sqlmem", "mcp", str(path)]
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            await s.list_tools()
            for _ in range(20):
                await s.call_tool("search_memory", {"query": "dog name"})
            for _ in range(calls):
                started = time.perf_counter()
                result = await s.call_tool("search_memory", {"query": "dog name"})
                samples.append(time.perf_counter() - started)
                assert not result.is_error

    anyio.run(main)
    return {
        "calls": calls,
        "p50_ms": round(percentile(samples, 50) * 1e3, 3),
        "p99_ms": round(percentile(samples, 99) * 1e3, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.tools",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--facts", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--mcp-calls", type=int, default=300)
    parser.add_argument("--no-mcp", action="store_true", help="skip T2 (no mcp extra)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sqlmem-tools-bench-") as tmp:
        report: dict[str, Any] = {"T1": t1_call_overhead(Path(tmp), args.facts, args.queries)}
        if not args.no_mcp:
            report["T2"] = t2_mcp_round_trip(Path(tmp), args.mcp_calls)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
