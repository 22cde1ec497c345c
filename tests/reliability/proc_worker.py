"""Child process of test_processes.py: threads appending and upserting on one shared file.

Usage: python proc_worker.py PATH PROC THREADS SECONDS SESSIONS

Each thread writes until the deadline: single appends, small append_many batches and fact
upserts, all with unique words. At the end the process prints one JSON object on stdout:
for every write, what was written and the seqs sqlmem returned, and the slowest call.
Any exception makes the process exit non-zero (with the traceback on stderr).
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from typing import Any

import sqlmem
from sqlmem import Fact, Message


def work(
    db: sqlmem.MemoryDB, proc: int, thread: int, deadline: float, sessions: int, out: dict[str, Any]
) -> None:
    rng = random.Random(proc * 1000 + thread)
    writes: list[list[Any]] = []  # [sid, [seqs], [contents]] or ["fact", id, content]
    slowest = 0.0
    i = 0
    while time.monotonic() < deadline:
        sid = f"s{rng.randrange(sessions)}"
        word = f"p{proc}t{thread}n{i}"
        roll = rng.random()
        started = time.monotonic()
        if roll < 0.6:
            content = f"message {word}"
            writes.append(
                [sid, [db.history.append(sid, Message(role="user", content=content))], [content]]
            )
        elif roll < 0.8:
            contents = [f"batch {word}x{k}" for k in range(rng.randint(2, 4))]
            seqs = db.history.append_many(sid, [Message(role="user", content=c) for c in contents])
            writes.append([sid, seqs, contents])
        else:
            fid = f"f{rng.randrange(40)}"
            content = f"fact {word}"
            db.facts.index(Fact(id=fid, content=content))
            writes.append(["fact", fid, content])
        slowest = max(slowest, time.monotonic() - started)
        i += 1
    out[f"{proc}-{thread}"] = {"writes": writes, "slowest": slowest}


def main() -> None:
    path, proc, threads, seconds, sessions = sys.argv[1:6]
    db = sqlmem.open(path, sqlmem.StoreConfig(busy_timeout_ms=5000))
    out: dict[str, Any] = {}
    errors: list[BaseException] = []
    deadline = time.monotonic() + float(seconds)

    def run(t: int) -> None:
        try:
            work(db, int(proc), t, deadline, int(sessions), out)
        except BaseException as exc:
            errors.append(exc)
            raise

    pool = [threading.Thread(target=run, args=(t,)) for t in range(int(threads))]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    db.close()
    if errors:
        sys.exit(1)
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    main()
