"""The synchronous half of `SqlmemSessionService`: each method is one `db.atomic()` block
over the history and document stores (see `adk_layout` for where things live), run on
the service's runner thread, so a session's state documents and its events change together
or not at all, on every backend.

State travels as JSON-safe dicts (ADK's own `extract_json_safe_state_delta` made them so),
events as ADK's JSON text; this module never builds ADK objects.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..protocols import Database
from ..records import Message
from ..rules.filters import check_limit
from ..sqlite.db import MemoryDB
from ..sqlite.stores import history_sql
from . import adk_layout as layout

__all__ = ["EVENT_KEY", "SessionRow", "SessionStore", "StoredEvent"]

#: The metadata key of a history message holding one ADK event's JSON text.
EVENT_KEY = "adk_event"

#: Every stored message's event JSON (archived ones too) oldest first, and the latest n
#: active ones newest first: the history store's own statements with one column, the
#: event's text taken out of the metadata by SQLite, so reading a session builds no
#: messages and decodes no metadata in Python.
_EVENT_COLUMN = f"m.metadata ->> '$.{EVENT_KEY}'"
_ALL_EVENTS = history_sql.SELECT_ALL.replace(history_sql.MESSAGE_COLUMNS, _EVENT_COLUMN)
_RECENT_EVENTS = history_sql.SELECT_RECENT.replace(history_sql.MESSAGE_COLUMNS, _EVENT_COLUMN)
if _EVENT_COLUMN not in _ALL_EVENTS or _EVENT_COLUMN not in _RECENT_EVENTS:  # pragma: no cover
    raise ImportError("sqlmem.sqlite.stores.history_sql changed its column list")


@dataclass
class SessionRow:
    """One stored session: its names, its own state, its times, its events' JSON."""

    app_name: str
    user_id: str
    session_id: str
    state: dict[str, Any]
    create_time: float
    update_time: float
    events: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class StoredEvent:
    """What `append` stores of one event."""

    json_text: str
    text: str
    role: str
    timestamp: float


class SessionStore:
    """ADK sessions over one `Database` (any backend)."""

    def __init__(self, open_db: Callable[[], Database]) -> None:
        self._open_db = open_db

    @property
    def db(self) -> Database:
        """The database (the service opens a path it was given on first use)."""
        return self._open_db()

    # ---- state documents

    def _read_json(self, path: str) -> dict[str, Any] | None:
        doc = self.db.docs.read(path)
        return None if doc is None else layout.state_from_json(doc.content)

    def _write_json(self, path: str, value: dict[str, Any]) -> bool:
        """Writes the document; whether it was created by this write."""
        text = json.dumps(value, ensure_ascii=False)
        return self.db.docs.write(path, text, enabled=False).created

    def app_state(self, app_name: str) -> dict[str, Any]:
        stored = self._read_json(layout.app_state_path(app_name))
        return {} if stored is None else dict(stored.get("state", {}))

    def user_state(self, app_name: str, user_id: str) -> dict[str, Any]:
        stored = self._read_json(layout.user_state_path(app_name, user_id))
        return {} if stored is None else dict(stored.get("state", {}))

    def _merge_app(self, app_name: str, delta: dict[str, Any]) -> None:
        if delta:
            state = self.app_state(app_name) | delta
            self._write_json(
                layout.app_state_path(app_name), {"app_name": app_name, "state": state}
            )

    def _merge_user(self, app_name: str, user_id: str, delta: dict[str, Any]) -> None:
        if delta:
            state = self.user_state(app_name, user_id) | delta
            self._write_json(
                layout.user_state_path(app_name, user_id),
                {"app_name": app_name, "user_id": user_id, "state": state},
            )

    def _session_record(self, app: str, user: str, sid: str) -> dict[str, Any] | None:
        stored = self._read_json(layout.session_path(app, user, sid))
        if stored is None or (stored.get("app_name"), stored.get("user_id"), stored.get("id")) != (
            app,
            user,
            sid,
        ):
            return None  # absent, or another name with the same hash (never shared)
        return stored

    def resolve_id(self, app: str, user: str, sid: str) -> str:
        """`sid` when a session is stored under it, else its stripped form (ADK's rule:
        ids are normalised, and an id stored padded by an older service still reads)."""
        if not sid or sid == sid.strip() or self._session_record(app, user, sid) is not None:
            return sid
        return sid.strip()

    # ---- sessions

    def create(
        self,
        app: str,
        user: str,
        sid: str,
        deltas: dict[str, dict[str, Any]],
        now: float,
    ) -> SessionRow | None:
        """The new session, or None when one with this id exists (nothing written).

        The session's document is written first and must be new: of two creations of one
        id racing on PostgreSQL, the second waits for the first's row and then finds it.
        """
        record = {
            "app_name": app,
            "user_id": user,
            "id": sid,
            "state": deltas["session"],
            "create_time": now,
        }
        try:
            with self.db.atomic():
                if not self._write_json(layout.session_path(app, user, sid), record):
                    raise _Refused  # it existed: the block puts it back as it was
                self._merge_app(app, deltas["app"])
                self._merge_user(app, user, deltas["user"])
        except _Refused:
            return None
        return SessionRow(app, user, sid, deltas["session"], now, now)

    def _last_event_time(self, app: str, user: str, sid: str) -> float | None:
        last = self.db.history.get_recent(layout.history_id(app, user, sid), 1, pair_safe=False)
        if not last or EVENT_KEY not in last[-1].metadata:
            return None
        return float(json.loads(last[-1].metadata[EVENT_KEY])["timestamp"])

    def _row(
        self, record: dict[str, Any], events: list[str], *, every_event: bool = False
    ) -> SessionRow:
        """`every_event`: `events` are all of the session's, so the last one's time is
        the session's update time without another read."""
        app, user, sid = record["app_name"], record["user_id"], record["id"]
        created = float(record["create_time"])
        if every_event:
            last = float(json.loads(events[-1])["timestamp"]) if events else None
        else:
            last = self._last_event_time(app, user, sid)
        return SessionRow(
            app,
            user,
            sid,
            dict(record["state"]),
            created,
            created if last is None else last,
            events,
        )

    def get(
        self,
        app: str,
        user: str,
        sid: str,
        *,
        recent: int | None = None,
        after: float | None = None,
    ) -> SessionRow | None:
        """The session with its events (the last `recent`, those at or after `after`)."""
        record = self._session_record(app, user, sid)
        if record is None:
            return None
        events: list[str] = []
        every_event = recent is None and after is None
        if recent != 0:
            hid = layout.history_id(app, user, sid)
            if after is None and recent is not None:
                stored = self._recent_event_texts(hid, recent)
            else:
                stored = self._every_event_text(hid)
            events = [text for text in stored if isinstance(text, str)]
            every_event = every_event and len(events) == len(stored)
            if after is not None:
                events = [e for e in events if json.loads(e)["timestamp"] >= after]
                events = events[-recent:] if recent is not None else events
        return self._row(record, events, every_event=every_event)

    def _recent_event_texts(self, hid: str, n: int) -> list[Any]:
        """The latest `n` active messages' event JSON, oldest first (None as above)."""
        if isinstance(self.db, MemoryDB):
            n = check_limit(n, "num_recent_events")  # capped like every limit
            if n <= 0:
                return []
            with self.db.engine.read() as conn:
                texts = [row[0] for row in conn.execute(_RECENT_EVENTS, (hid, n))]
            texts.reverse()
            return texts
        messages = self.db.history.get_recent(hid, n, pair_safe=False)
        return [m.metadata.get(EVENT_KEY) for m in messages]

    def _every_event_text(self, hid: str) -> list[Any]:
        """Each stored message's event JSON (None for a message other code wrote)."""
        if isinstance(self.db, MemoryDB):
            with self.db.engine.read() as conn:
                return [row[0] for row in conn.execute(_ALL_EVENTS, (hid,))]
        messages = self.db.history.get_all(hid, include_archived=True)
        return [m.metadata.get(EVENT_KEY) for m in messages]

    def list(self, app: str, user: str | None) -> list[SessionRow]:
        """The sessions of an app (of one user), oldest update first, without events."""
        folder = layout.user_folder(app, user) if user is not None else layout.app_folder(app)
        rows = []
        for info in self.db.docs.list(prefix=folder + "/"):
            parts = info.path.split("/")
            if len(parts) != 4 or parts[3] == "user.md":
                continue
            record = self._read_json(info.path)
            if record is None or record.get("app_name") != app or "id" not in record:
                continue
            if user is not None and record.get("user_id") != user:
                continue
            rows.append(self._row(record, []))
        rows.sort(key=lambda row: (row.update_time, row.user_id, row.session_id))
        return rows

    def delete(self, app: str, user: str, sid: str) -> None:
        with self.db.atomic():
            if self._session_record(app, user, sid) is not None:
                self.db.docs.delete(layout.session_path(app, user, sid))
            self.db.history.purge(layout.history_id(app, user, sid))

    def append(
        self,
        app: str,
        user: str,
        sid: str,
        deltas: dict[str, dict[str, Any]],
        event: StoredEvent,
        seen_update_time: float,
    ) -> str | None:
        """Stores one event and its state changes together. None when stored; else why
        not: "missing" (no such session) or "stale" (the caller's copy of the session is
        older than the stored one), with nothing written.

        The event is appended first: that write takes the session's lock on every backend
        (on PostgreSQL, its counter row until the block commits), so of two writers holding
        the same copy, the second reads the first one's event and is refused as stale, and
        the state documents are read and merged under that lock too.
        """
        hid = layout.history_id(app, user, sid)
        try:
            with self.db.atomic():
                record = self._session_record(app, user, sid)
                if record is None:
                    return "missing"
                message = Message(
                    role=event.role,  # type: ignore[arg-type]
                    content=event.text,
                    metadata={EVENT_KEY: event.json_text},
                )
                self.db.history.append(hid, message)
                before = self.db.history.get_recent(hid, 2, pair_safe=False)[:-1]
                stored_time = (
                    float(json.loads(before[0].metadata[EVENT_KEY])["timestamp"])
                    if before and EVENT_KEY in before[0].metadata
                    else float(record["create_time"])
                )
                if stored_time > seen_update_time:
                    raise _Refused
                self._merge_app(app, deltas["app"])
                self._merge_user(app, user, deltas["user"])
                if deltas["session"]:
                    record["state"] = dict(record["state"]) | deltas["session"]
                    self._write_json(layout.session_path(app, user, sid), record)
        except _Refused:  # raised inside the block: the event's append is rolled back
            return "stale"
        return None


class _Refused(Exception):
    """Leaves a write's block so that nothing it wrote stays."""
