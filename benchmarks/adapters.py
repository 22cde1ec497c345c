"""The framework adapters beside the frameworks' own SQLite backends (issue 20).

    python -m benchmarks.adapters [--turns N]

Rows: an agent turn through the OpenAI Agents SDK's session interface (add the turn's two
items, read the latest 20), reading a whole 400-item session back, and the same with
four threads each running its own event loop and session on one file. Beside each
sqlmem number, `agents.SQLiteSession` in the same run. File-backed, WAL (sqlmem's
default; SQLiteSession sets WAL itself). Needs the `openai-agents` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
from agents import SQLiteSession

from sqlmem.adapters.openai_agents import SqlmemSession


def _items(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        if i % 2 == 0:
            out.append({"role": "user", "content": f"question {i} about the weather in Paris"})
        else:
            out.append(
                {
                    "id": f"msg_{i}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": f"answer {i}", "annotations": []}],
                }
            )
    return out


async def _turns(session: Any, turns: int) -> float:
    items = _items(turns * 2)
    start = time.perf_counter()
    for t in range(turns):
        await session.add_items(items[2 * t : 2 * t + 2])
        await session.get_items(20)
    return (time.perf_counter() - start) / turns


async def _read_all(session: Any, reps: int) -> float:
    await session.add_items(_items(400))
    start = time.perf_counter()
    for _ in range(reps):
        await session.get_items()
    return (time.perf_counter() - start) / reps


def _threads(make: Callable[[str], Any], turns: int) -> tuple[float, int]:
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        session = make(f"t{n}")
        try:
            asyncio.run(_turns(session, turns))
        except BaseException as exc:  # counted, not raised: the row reports them
            errors.append(exc)
        finally:
            session.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (time.perf_counter() - start) / (4 * turns), len(errors)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    turns = parser.parse_args().turns
    print(f"Python {platform.python_version()}, apsw {apsw.apsw_version()}, "
          f"SQLite {apsw.sqlite_lib_version()}")  # fmt: skip
    backends: dict[str, Callable[[Path, str], Any]] = {
        "agents.SQLiteSession": lambda p, s: SQLiteSession(s, p),
        "SqlmemSession": lambda p, s: SqlmemSession(s, p),
    }
    results: dict[str, dict[str, str]] = {name: {} for name in backends}
    for name, make in backends.items():
        turn, read = [], []
        for _ in range(3):  # best of three: the machine is shared
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "memory.db"
                session = make(path, "bench")
                turn.append(asyncio.run(_turns(session, turns)))
                read.append(asyncio.run(_read_all(session, 50)))
                session.close()
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "memory.db"
            per_turn, errors = _threads(lambda s, make=make, path=path: make(path, s), turns)
        results[name]["turn: add 2 + get 20"] = f"{min(turn) * 1e3:.3f} ms"
        results[name]["get_items() of 400"] = f"{min(read) * 1e3:.3f} ms"
        results[name]["4 threads x turns"] = f"{per_turn * 1e3:.3f} ms/turn, {errors} errors"
    rows = list(results["SqlmemSession"])
    print(f"| row | {' | '.join(backends)} |")
    print(f"|---|{'---|' * len(backends)}")
    for row in rows:
        print(f"| {row} | {' | '.join(results[name][row] for name in backends)} |")


if __name__ == "__main__":
    main()
