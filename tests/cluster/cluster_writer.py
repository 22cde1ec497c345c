"""Child process of test_failover.py: threads writing to a cluster while its primary dies.

Usage: python cluster_writer.py DSN AGENT NAME THREADS STOP_FILE

Each thread cycles through three writes, each with a unique key: a history append (to
its own session and, every other time, to the session all writers share), a `remember`
of a fact, and an edit of its own document (a line inserted before its END marker). It
writes until STOP_FILE exists. Every call's outcome is recorded: "ok" (acknowledged),
"busy" (StorageBusyError: nothing was written), "unknown" (CommitUnknownError: may be
written), or the exception's module and class for anything else (the test fails on
those). The process prints one JSON object on stdout at the end.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import sqlmem
import sqlmem.postgres as sp
from sqlmem import CommitUnknownError, Fact, Message, StorageBusyError


def attempt(call: Any) -> tuple[str, Any]:
    try:
        return "ok", call()
    except CommitUnknownError:
        return "unknown", None
    except StorageBusyError:
        return "busy", None
    except BaseException as exc:  # recorded, then the test fails on it
        return f"{type(exc).__module__}.{type(exc).__name__}: {exc}", None


def write(db: sp.PostgresDB, kind: str, key: str, session: str, doc: str) -> Any:
    if kind == "append":
        return db.history.append(session, Message(role="user", content=key))
    if kind == "remember":
        return db.facts.remember(Fact(content=f"fact {key}"))
    return db.docs.edit(doc, "END", f"{key}\nEND")


def work(db: sp.PostgresDB, name: str, thread: int, stop: Path, out: list[list[Any]]) -> None:
    doc = f"{name}/t{thread}.md"
    while attempt(lambda: db.docs.write(doc, "END\n"))[0] != "ok":
        time.sleep(0.05)
    i = 0
    while not stop.exists():
        key = f"{name}-t{thread}-{i}"
        kind = ("append", "remember", "edit")[i % 3]
        session = "shared" if i % 2 else f"{name}-t{thread}"
        started = time.time()
        outcome, value = attempt(functools.partial(write, db, kind, key, session, doc))
        out.append([kind, key, outcome, started, time.time(), session, doc, value])
        if outcome == "busy" or outcome == "unknown":
            time.sleep(0.02)  # what a caller does: back off a little, go on
        i += 1


def main() -> None:
    dsn, agent, name, threads, stop = sys.argv[1:6]
    config = sqlmem.StoreConfig(busy_timeout_ms=2000)
    outcomes: list[list[Any]] = []
    with sp.open(dsn, agent, config, pool_size=int(threads)) as db:
        pool = [
            threading.Thread(target=work, args=(db, name, t, Path(stop), outcomes))
            for t in range(int(threads))
        ]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
    json.dump({"outcomes": outcomes}, sys.stdout)


if __name__ == "__main__":
    main()
