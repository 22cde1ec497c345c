"""What `sqlmem sessions` shows: every session with its counts and last activity.

Not part of the HistoryStore protocol (a person inspecting a file wants it, an agent does
not), so it reads the SQLite schema directly, in one statement (one snapshot): the active
count from the session row (`last_seq - archived_seq - holes`), the archived messages
counted on UNIQUE(session, seq), and the created_at of the newest message.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from ...rules.encoding import dt_from_ms
from ..core.engine import Engine
from .history_sql import SESSION_STATS

__all__ = ["SessionStats", "session_stats"]


class SessionStats(NamedTuple):
    session_id: str
    active: int
    archived: int
    last_activity: datetime | None  # None: the session holds only a summary


def session_stats(engine: Engine) -> list[SessionStats]:
    """Every session `HistoryStore.sessions()` lists, in the same order."""
    with engine.read() as conn:
        rows: list[Any] = conn.execute(SESSION_STATS).fetchall()
    return [
        SessionStats(
            str(sid), int(active), int(archived), None if last is None else dt_from_ms(int(last))
        )
        for sid, active, archived, last in rows
    ]
