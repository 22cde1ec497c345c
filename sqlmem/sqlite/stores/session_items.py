"""The lean read of a session for the frameworks' session adapters.

An adapter that keeps a framework's item in each message's metadata needs four columns
per message, not a `Message`: building the records cost about as much again as reading
the rows (get_items of 400 items: ~1.4 ms through `get_all`, ~0.9 ms here, the SDK's own
SQLiteSession ~0.8 ms). The statements are the history store's own with fewer columns,
so which messages are active stays written once (history_sql).
"""

from __future__ import annotations

from typing import Any

from ...rules.checks import check_session_id
from ...rules.filters import check_limit
from ..core.engine import Engine
from . import history_sql as sql

__all__ = ["ItemRow", "read_items"]

_COLUMNS = "m.role, m.content, m.tool_call_id, m.metadata"
_RECENT = sql.SELECT_RECENT.replace(sql.MESSAGE_COLUMNS, _COLUMNS)
_ALL_ACTIVE = sql.SELECT_ALL_ACTIVE.replace(sql.MESSAGE_COLUMNS, _COLUMNS)
if _COLUMNS not in _RECENT or _COLUMNS not in _ALL_ACTIVE:  # pragma: no cover
    raise ImportError("sqlmem.sqlite.stores.history_sql changed its column list")

#: (role, content, tool_call_id, metadata JSON text) of one active message.
ItemRow = tuple[str, str, str, str]


def read_items(engine: Engine, session_id: str, limit: int | None) -> list[Any]:
    """The session's active messages as `ItemRow`s, oldest first: all of them (`limit`
    None) or the latest `limit` (> 0; a larger one than 2**62 means all, as every limit:
    `check_limit`). One statement, so one snapshot."""
    check_session_id(session_id)
    if limit is not None:
        limit = check_limit(limit, "limit")
    with engine.read() as conn:
        if limit is None:
            return conn.execute(_ALL_ACTIVE, (session_id,)).fetchall()
        rows = conn.execute(_RECENT, (session_id, limit)).fetchall()
    rows.reverse()
    return rows
