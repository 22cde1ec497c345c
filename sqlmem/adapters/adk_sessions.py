"""`SqlmemSessionService`: Google ADK's `BaseSessionService` over any sqlmem database.

    from sqlmem.adapters.adk import SqlmemSessionService
    sessions = SqlmemSessionService("memory.db")   # or sqlmem.open(...) of any backend
    runner = Runner(agent=agent, app_name="app", session_service=sessions)

It behaves as ADK's own services do: `app:` keys are shared by every session of the app,
`user:` keys by every session of the user, `temp:` keys live only in the session object
of the current invocation; `get_session` merges the three, `GetSessionConfig` narrows the
events (`num_recent_events`, `after_timestamp`), a session's `last_update_time` is its
last event's timestamp, and appending to a stale copy raises `StaleSessionError`.
Where things are stored: `sqlmem.adapters.adk_layout`.
"""

from __future__ import annotations

from typing import Any

from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid
from google.adk.sessions import _session_util
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.sessions.state import State

from ._any_db import AnyBackend, AnyDbOrPath
from .adk_session_store import SessionRow, SessionStore, StoredEvent

__all__ = ["SqlmemSessionService", "event_text"]


def event_text(event: Event) -> str:
    """The words of an event, for search: its text parts, else its function calls' names
    and their answers."""
    content = event.content
    if content is None or not content.parts:
        return ""
    words = [part.text for part in content.parts if part.text]
    if not words:
        for part in content.parts:
            if part.function_call is not None:
                words.append(f"{part.function_call.name}({part.function_call.args or {}})")
            if part.function_response is not None:
                words.append(f"{part.function_response.name}: {part.function_response.response}")
    return "\n".join(words)


def _merged(
    app_state: dict[str, Any], user_state: dict[str, Any], own: dict[str, Any]
) -> dict[str, Any]:
    state = dict(own)
    state.update({State.APP_PREFIX + key: value for key, value in app_state.items()})
    state.update({State.USER_PREFIX + key: value for key, value in user_state.items()})
    return state


class SqlmemSessionService(BaseSessionService):
    """ADK sessions, their state and events in one sqlmem database (SQLite file, in
    memory, or PostgreSQL): `db_or_path` is a database (shared, never closed here) or a
    path the service opens and closes with `close()`."""

    def __init__(self, db_or_path: AnyDbOrPath) -> None:
        self._backend = AnyBackend(db_or_path, "SqlmemSessionService")
        self._store = SessionStore(lambda: self._backend.db)

    async def close(self) -> None:
        await self._backend.aclose()

    def _session(
        self, row: SessionRow, app_state: dict[str, Any], user_state: dict[str, Any]
    ) -> Session:
        return Session(
            app_name=row.app_name,
            user_id=row.user_id,
            id=row.session_id,
            state=_merged(app_state, user_state, row.state),
            events=[Event.model_validate_json(text) for text in row.events],
            last_update_time=row.update_time,
        )

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        store = self._store
        if session_id:
            session_id = await self._backend.run(store.resolve_id, app_name, user_id, session_id)
        session_id = session_id or platform_uuid.new_uuid()
        deltas = _session_util.extract_json_safe_state_delta(state or {})
        now = platform_time.get_time()
        row = await self._backend.write(store.create, app_name, user_id, session_id, deltas, now)
        if row is None:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.")
        return await self._with_state(row)

    async def _with_state(self, row: SessionRow) -> Session:
        def states() -> tuple[dict[str, Any], dict[str, Any]]:
            return self._store.app_state(row.app_name), self._store.user_state(
                row.app_name, row.user_id
            )

        app_state, user_state = await self._backend.run(states)
        return self._session(row, app_state, user_state)

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        store = self._store
        recent = config.num_recent_events if config else None
        after = config.after_timestamp if config and config.after_timestamp else None

        def read() -> Session | None:  # events are parsed here too: off the event loop
            sid = store.resolve_id(app_name, user_id, session_id)
            row = store.get(app_name, user_id, sid, recent=recent, after=after)
            if row is None:
                return None
            return self._session(
                row, store.app_state(app_name), store.user_state(app_name, user_id)
            )

        return await self._backend.run(read)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        store = self._store

        def read() -> list[Session]:
            rows = store.list(app_name, user_id)
            app_state = store.app_state(app_name)
            users = {row.user_id: store.user_state(app_name, row.user_id) for row in rows}
            return [self._session(row, app_state, users[row.user_id]) for row in rows]

        return ListSessionsResponse(sessions=await self._backend.run(read))

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        store = self._store

        def delete() -> None:
            store.delete(app_name, user_id, store.resolve_id(app_name, user_id, session_id))

        await self._backend.write(delete)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await self._backend.run(self._store.user_state, app_name, user_id)

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        deltas = _session_util.extract_json_safe_state_delta(
            event.actions.state_delta if event.actions and event.actions.state_delta else {}
        )
        stored = StoredEvent(
            json_text=event.model_dump_json(exclude_none=True),
            text=event_text(event),
            role="user" if event.author == "user" else "assistant",
            timestamp=event.timestamp,
        )
        refused = await self._backend.write(
            self._store.append,
            session.app_name,
            session.user_id,
            session.id,
            deltas,
            stored,
            session.last_update_time,
        )
        if refused == "missing":
            raise SessionNotFoundError(f"Session {session.id} not found.")
        if refused == "stale":
            raise StaleSessionError(
                "The last_update_time provided in the session object is earlier than the "
                "update_time in storage. Please check if it is a stale session."
            )
        session.last_update_time = event.timestamp
        return self._commit_event_to_session(session, event)
