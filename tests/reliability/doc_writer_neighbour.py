"""Child of test_doc_write_lock: another process's writer with a short busy timeout.

`python doc_writer_neighbour.py DB SECONDS`: appends a message every 20 ms for SECONDS with
a busy timeout of 1 s, and prints one JSON object: appends made and StorageBusyError seen.
"""

from __future__ import annotations

import json
import sys
import time

import sqlmem
from sqlmem import Message, StorageBusyError


def main(path: str, seconds: float) -> None:
    db = sqlmem.open(path, sqlmem.StoreConfig(busy_timeout_ms=1000))
    print("ready", flush=True)
    appended = busy = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            db.history.append("neighbour", Message(role="user", content=f"tick {appended}"))
            appended += 1
        except StorageBusyError:
            busy += 1
        time.sleep(0.02)
    db.close()
    print(json.dumps({"appended": appended, "busy": busy}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
