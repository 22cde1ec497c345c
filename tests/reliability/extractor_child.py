"""Child of test_extractor_processes: one process running the workspace extractor once.

`python extractor_child.py DB CALLS START COOLDOWN LEASE [hang]`: waits until the wall
clock reaches START (so the processes start together), runs the extractor on session "s",
and prints its outcome's reason. The model appends a line to the CALLS file (one line per
model call, across processes), then holds for a while so the runs overlap; with `hang` it
prints "model" and waits to be killed (a run that dies holding its lease).
"""

from __future__ import annotations

import json
import sys
import time

import sqlmem
from sqlmem import WorkspaceExtractor


def main(path: str, calls: str, start: float, cooldown: float, lease: float, hang: bool) -> None:
    db = sqlmem.open(path)

    def model(prompt: str) -> str:
        with open(calls, "a", encoding="utf-8") as out:
            out.write("call\n")
        if hang:
            print("model", flush=True)
            time.sleep(600)
        time.sleep(1.0)
        return json.dumps({"should_update": False, "reason": "nothing new"})

    extractor = WorkspaceExtractor(db, model, cooldown_seconds=cooldown, lease_seconds=lease)
    while time.time() < start:
        time.sleep(0.005)
    print(extractor.run("s").reason, flush=True)
    db.close()


if __name__ == "__main__":
    main(
        sys.argv[1],
        sys.argv[2],
        float(sys.argv[3]),
        float(sys.argv[4]),
        float(sys.argv[5]),
        len(sys.argv) > 6 and sys.argv[6] == "hang",
    )
