"""Child program of test_fork.py: forks again and again while other threads write and read.

    python fork_load.py DB FORKS MODE

A writer thread commits large batches (messages of 3 KB, 600 at a time, so each
transaction spills pages into the WAL before it commits) and facts, a reader thread
searches and reads, and the main thread forks FORKS times. MODE:
- "wait": the normal path. Children take turns: one exits at once, one opens the file and
  appends, one appends through the handle it inherited, one exits through a normal
  interpreter shutdown (sys.exit, which runs the garbage collector).
- "nowait": forksafe.FORK_WAIT_SECONDS = 0, so forks never wait for the writer: the child
  inherits connections in use, must abandon them, and exits through sys.exit. This is the
  case that used to roll back the parent's transaction through the shared -shm. There is
  no reader thread: a child of a fork that did not wait may find one of SQLite's mutexes
  held for ever, and the reader thread's private tokenizer connection is closed in the
  child when Python drops the other threads' thread-local data (that is why forks wait).

Prints one JSON line: counts of forks, hung and failed children, writes acknowledged,
rows found afterwards, and `check()`.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import sqlmem
from sqlmem import Fact, Message, forksafe

#: A child still running after this many seconds is hung.
CHILD_DEADLINE = float(os.environ.get("FORK_CHILD_DEADLINE", "30"))


def main() -> None:
    path, forks, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "nowait":
        forksafe.FORK_WAIT_SECONDS = 0.0
    db = sqlmem.open(path)
    stop = threading.Event()
    acked = {"messages": 0, "facts": 0}

    def write() -> None:
        batch = 0
        while not stop.is_set():
            messages = [
                Message(role="user", content=f"batch {batch} message {i} " + "x" * 3000)
                for i in range(600)
            ]
            db.history.append_many("import", messages)
            acked["messages"] += len(messages)
            facts = [Fact(content=f"fact {batch}-{i} about forks") for i in range(200)]
            db.facts.index_many(facts)
            acked["facts"] += len(facts)
            batch += 1

    def read() -> None:
        while not stop.is_set():
            db.facts.search("forks about", top_k=5)
            db.history.get_recent("import", 20)

    threads = [threading.Thread(target=write)]
    if mode == "wait":  # see the module docstring for why "nowait" has no reader
        threads.append(threading.Thread(target=read))
    for thread in threads:
        thread.start()
    while acked["messages"] == 0:  # forks start while imports are under way
        time.sleep(0.01)
    hung = failed = using = 0
    started = time.monotonic()
    for k in range(forks):
        turn = k % 4 if mode == "wait" else 3
        using += turn in (1, 2)
        pid = os.fork()
        if pid == 0:
            _child(path, db, turn, k)
        hung_now, failed_now = _reap(pid)
        hung += hung_now
        failed += failed_now
    seconds = time.monotonic() - started
    stop.set()
    for thread in threads:
        thread.join()
    found_before_reopen = db.history.count("import")
    db.close()
    with sqlmem.open(path) as again:
        report = again.check()
        result = {
            "forks": forks,
            "seconds": round(seconds, 1),
            "hung": hung,
            "failed": failed,
            "acked_messages": acked["messages"],
            "acked_facts": acked["facts"],
            "messages": again.history.count("import"),
            "messages_before_reopen": found_before_reopen,
            "facts": again.facts.count(),
            "child_appends_expected": using,
            "child_appends": again.history.count("child"),
            "check_ok": report.ok,
            "problems": report.problems[:3],
        }
    print(json.dumps(result))


def _child(path: str, inherited: sqlmem.MemoryDB, turn: int, k: int) -> None:
    try:
        if turn == 1:
            with sqlmem.open(path) as mine:
                mine.history.append("child", Message(role="user", content=f"child {k}"))
        elif turn == 2:
            inherited.history.append("child", Message(role="user", content=f"child {k}"))
            inherited.history.get_recent("import", 5)
        elif turn == 3:
            sys.exit(0)  # a full interpreter shutdown: nothing may close inherited handles
    except SystemExit:
        raise
    except BaseException as exc:
        print(f"child {k}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        os._exit(3)
    os._exit(0)


def _reap(pid: int) -> tuple[int, int]:
    deadline = time.monotonic() + CHILD_DEADLINE
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return 0, int(status != 0)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return 1, 0
        time.sleep(0.0005)


if __name__ == "__main__":
    main()
