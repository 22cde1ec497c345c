"""Appends per second as writer processes are added to one store (a `benchmarks.curves`
panel): sqlmem on one SQLite file, raw apsw on one file's bare table, and sqlmem on
PostgreSQL (one agent of a shared server).

Why processes, not threads: an agent fleet is usually several worker processes writing
the same memory, and what must not happen as they are added is a collapse (lock errors,
retries eating the throughput). Each writer process opens the store, says it is ready,
waits for the word to start, then appends one message per call to its own session for a
fixed time and reports how many it wrote; the figure is their sum per second.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw

import sqlmem

__all__ = ["appends_by_writers", "postgres_server"]

# One writer process: argv = kind ("sqlmem" | "raw"), target (a path or a URL),
# agent id ("" for files), session id, seconds.
_WRITER = textwrap.dedent(
    """
    import sys, time
    kind, target, agent, session, seconds = sys.argv[1:6]
    if kind == "raw":
        import apsw
        conn = apsw.Connection(target)
        conn.set_busy_timeout(30_000)
        conn.pragma("synchronous", "NORMAL")
        insert = "INSERT INTO messages(session_id, role, content, created_at) VALUES (?,?,?,?)"
        def append(i):
            conn.execute(insert, (session, "user", f"message {i} from {session}", time.time_ns()))
    else:
        import sqlmem
        db = sqlmem.open(target, agent_id=agent) if agent else sqlmem.open(target)
        def append(i):
            db.history.append(session, sqlmem.Message(role="user", content=f"message {i}"))
    append(-1)
    print("ready", flush=True)
    sys.stdin.readline()
    end, done = time.perf_counter() + float(seconds), 0
    while time.perf_counter() < end:
        append(done)
        done += 1
    print(done, flush=True)
    """
)

_RAW_TABLE = (
    "CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL,"
    " role TEXT NOT NULL, content TEXT NOT NULL, created_at INTEGER NOT NULL)"
)


def _run_writers(kind: str, target: str, agent: str, writers: int, seconds: float) -> float:
    """Appends per second summed over `writers` processes started together."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, kind, target, agent, f"w{i}", str(seconds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(writers)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a {kind} writer process failed to start")
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        counts = []
        for proc in procs:
            out, _ = proc.communicate(timeout=seconds + 120)
            if proc.returncode != 0:
                raise RuntimeError(f"a {kind} writer process failed ({proc.returncode})")
            counts.append(int(out.strip()))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return sum(counts) / seconds


def appends_by_writers(
    counts: list[int], folder: Path, seconds: float, postgres_dsn: str | None = None
) -> dict[str, list[tuple[int, float]]]:
    """appends/s with each number of writer processes: sqlmem and raw on one file each
    (made before the writers start), and sqlmem on PostgreSQL when a server is given."""
    out: dict[str, list[tuple[int, float]]] = {}
    for writers in counts:
        path = folder / f"writers-{writers}.db"
        sqlmem.open(path).close()
        raw = folder / f"raw-writers-{writers}.db"
        conn = apsw.Connection(str(raw))
        conn.pragma("journal_mode", "wal")
        conn.execute(_RAW_TABLE)
        conn.close()
        sides = {
            "sqlmem, one SQLite file": ("sqlmem", str(path), ""),
            "raw apsw, one file (bare table)": ("raw", str(raw), ""),
        }
        if postgres_dsn is not None:
            agent = f"writers-{writers}-{time.time_ns()}"
            sqlmem.open(postgres_dsn, agent_id=agent).close()
            sides["sqlmem, PostgreSQL (one agent)"] = ("sqlmem", postgres_dsn, agent)
        for name, (kind, target, agent_id) in sides.items():
            rate = _run_writers(kind, target, agent_id, writers, seconds)
            out.setdefault(name, []).append((writers, rate))
    return out


@contextmanager
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL server (the tests' `pgserver`: fsync off, so its figures
    are an upper bound for a durable server), stopped on leaving."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import pgserver  # type: ignore[import-not-found]

    server = pgserver.start()
    try:
        yield str(server.dsn)
    finally:
        server.stop()
