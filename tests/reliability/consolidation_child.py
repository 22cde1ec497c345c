"""Child of test_consolidation_crash: appends turns and consolidates in a loop until killed.

The fake model prints "model" when called (the parent may aim its kill there) and names the
newest message it was shown ("upto m17"), so the parent can check that each HISTORY.md line
matches exactly what was archived with it.
"""

from __future__ import annotations

import json
import re
import sys

import sqlmem
from sqlmem import Consolidator, Message


def model(prompt: str) -> str:
    newest = re.findall(r": (m\d+)$", prompt, flags=re.MULTILINE)[-1]
    print("model", flush=True)  # the parent may aim its kill at the transaction that follows
    return json.dumps({"history_entry": f"upto {newest}", "memory_update": f"# Memory\n{newest}"})


def main(path: str) -> None:
    db = sqlmem.open(path)
    consolidator = Consolidator(db, model, memory_window=4, keep_last=2)
    n = len(db.history.get_all("s", include_archived=True))
    print("ready", flush=True)
    while True:
        for role in ("user", "assistant", "user", "assistant"):
            db.history.append("s", Message(role=role, content=f"m{n}"))
            n += 1
        consolidator.maybe_consolidate("s")


if __name__ == "__main__":
    main(sys.argv[1])
