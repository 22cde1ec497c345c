"""The framework adapters beside the frameworks' own SQLite backends (issue 20).

    python -m benchmarks.adapters [--turns N] [--processes 4] [--ops 50]

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


# -- 4 processes x 4 threads on one file (issue 20: "where the peers' own backends fail or
# serialise"): every backend below, sqlmem's adapters and the frameworks' own SQLite ones.
# Each thread makes its own object on the shared file (as separate workers would), runs
# `ops` operations, and counts the exceptions it meets instead of stopping; afterwards one
# reader counts what landed, so lost writes show as well as raised ones.


def _session_ops(name: str, path: str, tag: str, ops: int) -> Callable[[], Any]:
    if name == "agents.SQLiteSession":
        session: Any = SQLiteSession(tag, path)
    else:
        session = SqlmemSession(tag, path)

    async def run() -> None:
        for i in range(ops):
            await session.add_items(_items(2 * i + 2)[2 * i :])
            await session.get_items(20)

    return lambda: asyncio.run(run())


def _make_store(name: str, path: str) -> Any:
    if name == "SqlmemStore":
        from sqlmem.adapters.langgraph import SqlmemStore

        return SqlmemStore(path)
    import sqlite3

    from langgraph.store.sqlite import SqliteStore  # type: ignore[import-not-found]

    store = SqliteStore(sqlite3.connect(path, check_same_thread=False, isolation_level=None))
    store.setup()
    return store


def _make_saver(name: str, path: str) -> Any:
    if name == "SqlmemSaver":
        from sqlmem.adapters.langgraph import SqlmemSaver

        return SqlmemSaver(path)
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver  # type: ignore[import-not-found]

    return SqliteSaver(sqlite3.connect(path, check_same_thread=False))


def _one_op(kind: str, obj: Any, tag: str, i: int) -> None:
    if kind == "store":
        obj.put(("bench", tag), f"k{i}", {"text": f"note {i} about the weather"})
        obj.search(("bench", tag), query=None, limit=5)
    elif kind == "saver":
        from langgraph.checkpoint.base import empty_checkpoint

        config = {"configurable": {"thread_id": tag, "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"turn": i}
        obj.put(config, checkpoint, {"source": "loop", "step": i}, {})
        obj.get_tuple(config)
    elif kind == "bytes":
        obj.mset([(f"{tag}/{i}", b"\x00" * 256)])
        obj.mget([f"{tag}/{i}"])
    else:  # chat history
        from langchain_core.messages import AIMessage, HumanMessage

        obj.add_messages([HumanMessage(content=f"q {i}"), AIMessage(content=f"a {i}")])
        obj.messages  # noqa: B018  # the read of a turn


def _thread_work(kind: str, name: str, path: str, tag: str, ops: int) -> tuple[int, list[str]]:
    errors: list[str] = []
    done = 0
    obj: Any = None
    try:
        if kind == "session":
            _session_ops(name, path, tag, ops)()
            return ops, errors
        if kind == "store":
            obj = _make_store(name, path)
        elif kind == "saver":
            obj = _make_saver(name, path)
        elif kind == "bytes":
            from sqlmem.adapters.langchain import SqlmemByteStore

            obj = SqlmemByteStore(path)
        else:
            from sqlmem.adapters.langchain import SqlmemChatMessageHistory

            obj = SqlmemChatMessageHistory(tag, path)
        for i in range(ops):
            try:
                _one_op(kind, obj, tag, i)
                done += 1
            except Exception as exc:  # counted, not hidden
                errors.append(f"{type(exc).__name__}: {str(exc)[:80]}")
    except Exception as exc:  # the object could not even be made
        errors.append(f"{type(exc).__name__}: {str(exc)[:80]}")
    finally:
        close = getattr(obj, "close", None)
        if close is not None:
            close()
        elif obj is not None and hasattr(obj, "conn"):
            obj.conn.close()
    return done, errors


#: Set in each worker process: every process starts its threads together.
_START: Any = None


def _init_process(barrier: Any) -> None:
    global _START
    _START = barrier


def _process_work(
    kind: str, name: str, path: str, proc: int, threads: int, ops: int
) -> tuple[int, list[str], float]:
    """One process: `threads` threads on the file; (operations done, errors, seconds),
    timed from the moment every process is ready (not counting their start-up)."""
    from concurrent.futures import ThreadPoolExecutor

    if _START is not None:
        _START.wait(300)
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        futures = [
            pool.submit(_thread_work, kind, name, path, f"p{proc}t{t}", ops) for t in range(threads)
        ]
        results = [f.result() for f in futures]
    return (
        sum(r[0] for r in results),
        [e for r in results for e in r[1]],
        time.perf_counter() - start,
    )


def _landed(kind: str, name: str, path: str, tags: list[str], ops: int) -> int:
    """How many of the expected writes one reader finds afterwards."""
    if kind == "session":
        make = SQLiteSession if name == "agents.SQLiteSession" else SqlmemSession

        async def count() -> int:
            total = 0
            for tag in tags:
                session = make(tag, path)
                total += len(await session.get_items()) // 2
                session.close()
            return total

        return asyncio.run(count())
    if kind == "store":
        store = _make_store(name, path)
        try:
            return sum(len(store.search(("bench", t), limit=ops + 10)) for t in tags)
        finally:
            getattr(store, "close", lambda: store.conn.close())()
    if kind == "saver":
        saver = _make_saver(name, path)
        try:
            return sum(len(list(saver.list({"configurable": {"thread_id": t}}))) for t in tags)
        finally:
            getattr(saver, "close", lambda: saver.conn.close())()
    if kind == "bytes":
        from sqlmem.adapters.langchain import SqlmemByteStore

        byte_store = SqlmemByteStore(path)
        try:
            keys = [f"{t}/{i}" for t in tags for i in range(ops)]
            return sum(v is not None for v in byte_store.mget(keys))
        finally:
            byte_store.close()
    from sqlmem.adapters.langchain import SqlmemChatMessageHistory

    total = 0
    for tag in tags:
        history = SqlmemChatMessageHistory(tag, path)
        total += len(history.messages) // 2
        history.close()
    return total


#: (kind, backend) rows of `concurrency_rows`, sqlmem's beside each framework's own.
CONCURRENCY_BACKENDS = [
    ("session", "SqlmemSession"),
    ("session", "agents.SQLiteSession"),
    ("store", "SqlmemStore"),
    ("store", "langgraph SqliteStore"),
    ("saver", "SqlmemSaver"),
    ("saver", "langgraph SqliteSaver"),
    ("bytes", "SqlmemByteStore"),
    ("history", "SqlmemChatMessageHistory"),
]


def concurrency_rows(processes: int = 4, threads: int = 4, ops: int = 50) -> list[dict[str, Any]]:
    """For each backend: `processes` processes x `threads` threads on one new file, each
    thread `ops` operations (a write and a read); returns one dict per backend with
    `backend`, `ops_per_s` (all workers together, timed from a barrier all processes pass
    once started), `errors` (exceptions raised, counted),
    `lost` (writes that reported success but are not in the file), `first_error`.
    A backend whose package is missing gets `errors: None` and `first_error` saying so.

        from benchmarks.adapters import concurrency_rows
        for row in concurrency_rows(): print(row)
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    rows: list[dict[str, Any]] = []
    spawn = multiprocessing.get_context("spawn")  # no inherited connections or locks
    for kind, name in CONCURRENCY_BACKENDS:
        row: dict[str, Any] = {"backend": name, "kind": kind}
        with tempfile.TemporaryDirectory() as folder:
            path = str(Path(folder) / "memory.db")
            try:
                _prepare(kind, name, path)
            except ImportError as exc:
                rows.append({**row, "ops_per_s": None, "errors": None, "lost": None,
                             "first_error": f"not installed: {exc}"})  # fmt: skip
                continue
            barrier = spawn.Barrier(processes)
            with ProcessPoolExecutor(
                processes, mp_context=spawn, initializer=_init_process, initargs=(barrier,)
            ) as pool:
                futures = [
                    pool.submit(_process_work, kind, name, path, p, threads, ops)
                    for p in range(processes)
                ]
                results = [f.result() for f in futures]
            elapsed = max(r[2] for r in results)
            done = sum(r[0] for r in results)
            errors = [e for r in results for e in r[1]]
            tags = [f"p{p}t{t}" for p in range(processes) for t in range(threads)]
            landed = _landed(kind, name, path, tags, ops)
        rows.append({
            **row,
            "ops_per_s": round(done / elapsed, 1),
            "errors": len(errors),
            "lost": max(done - landed, 0),
            "first_error": errors[0] if errors else "",
        })  # fmt: skip
    return rows


def _prepare(kind: str, name: str, path: str) -> None:
    """Create the file (and the peer's tables) before the workers start, as a deployment
    would; raises ImportError when the backend's package is missing."""
    if name.startswith("langgraph"):
        obj = (_make_store if kind == "store" else _make_saver)(name, path)
        obj.setup()
        obj.conn.close()
    elif not name.startswith("agents"):
        import sqlmem

        sqlmem.open(path).close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--processes", type=int, default=4, help="0: no concurrency rows")
    parser.add_argument("--ops", type=int, default=50, help="operations per thread")
    args = parser.parse_args()
    turns = args.turns
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
    if args.processes:
        print(f"\n{args.processes} processes x 4 threads on one file, {args.ops} ops each:")
        print("| backend | ops/s | errors | lost | first error |")
        print("|---|---|---|---|---|")
        for r in concurrency_rows(args.processes, 4, args.ops):
            print(f"| {r['backend']} | {r['ops_per_s']} | {r['errors']} | {r['lost']} | "
                  f"{r['first_error']} |")  # fmt: skip


if __name__ == "__main__":
    main()


#: The framework's own backend beside each sqlmem adapter in `concurrency_rows`.
_PEER_OF = {"SqlmemSession": "agents.SQLiteSession", "SqlmemStore": "langgraph SqliteStore",
            "SqlmemSaver": "langgraph SqliteSaver"}  # fmt: skip


def adapter_workloads(ctx: Any) -> list[Any]:
    """The runner's AD rows: every adapter under N processes x M threads on one file
    (4 x 4 at full and quick sizes, 2 x 2 for the smoke run), beside the framework's own
    SQLite backend in the same run. A row fails when any call raised or any acknowledged
    write is missing; the peer column shows the framework's backend (at least as fast is
    the target)."""
    from .harness import Row, Skip, with_peers

    smoke = ctx.sizes.w1_messages < 1_000
    processes, threads = (2, 2) if smoke else (4, 4)
    ops = 3 if smoke else max(ctx.sizes.w1_messages // 400, 5)
    ctx.log(f"AD: adapters, {processes} processes x {threads} threads x {ops} ops ...")
    found = {r["backend"]: r for r in concurrency_rows(processes, threads, ops)}
    if found["SqlmemSession"]["ops_per_s"] is None:
        raise Skip(str(found["SqlmemSession"]["first_error"]))
    rows = []
    for name, result in found.items():
        if not name.startswith("Sqlmem") or result["ops_per_s"] is None:
            continue
        rate = float(result["ops_per_s"])
        row = Row(
            f"AD {name}, {processes} processes x {threads} threads on one file",
            "ops/s (a write and a read)", rate, float("nan"), None,
            "no error, none lost; >= the framework's backend",
            extra={"errors": result["errors"], "lost": result["lost"]},
        )  # fmt: skip
        if result["errors"] or result["lost"]:
            row.failed_condition = (
                f"{result['errors']} errors, {result['lost']} lost: {result['first_error']}"
            )
        peer = found.get(_PEER_OF.get(name, ""))
        if peer is not None:
            peer_rate = peer["ops_per_s"] if not peer["errors"] else float("nan")
            row.extra["peer_errors"] = peer["errors"]
            with_peers(row, {peer["backend"]: peer_rate or float("nan")}, rate=True, limit=1.0)
        rows.append(row)
    return rows
