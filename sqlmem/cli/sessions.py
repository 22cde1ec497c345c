"""`sqlmem sessions PATH`: which conversations a memory file holds, and how much of each.

Read-only like every inspection command (`open_existing`: no WAL switch, no open hook,
no optimize, nothing written). The rows come from `sqlite.session_stats`.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from ..sqlite.stores.session_stats import session_stats
from .opening import open_existing
from .output import Output

__all__ = ["run_sessions"]


def run_sessions(args: argparse.Namespace, out: Output) -> int:
    with open_existing(args.path) as db:
        rows = session_stats(db.engine)
    data = {
        "sessions": [
            {
                "session_id": row.session_id,
                "active": row.active,
                "archived": row.archived,
                "last_activity": row.last_activity,
            }
            for row in rows
        ]
    }
    out.result(data, _sessions_text)
    return 0


def _sessions_text(data: dict[str, Any]) -> Iterator[str]:
    sessions = data["sessions"]
    if not sessions:
        yield "no sessions"
        return
    width = max(len(s["session_id"]) for s in sessions)
    yield f"{'SESSION':<{width}}  {'ACTIVE':>7}  {'ARCHIVED':>8}  LAST ACTIVITY"
    for s in sessions:
        last = s["last_activity"]
        when = "-" if last is None else last.strftime("%Y-%m-%d %H:%M:%S UTC")
        yield f"{s['session_id']:<{width}}  {s['active']:>7}  {s['archived']:>8}  {when}"
    yield f"{len(sessions)} session{'s' if len(sessions) != 1 else ''}"
