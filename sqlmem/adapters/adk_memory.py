"""`SqlmemMemoryService`: Google ADK's `BaseMemoryService` over any sqlmem database.

A memory is one event with words (its text parts): a fact in `db.facts` whose content is
those words (BM25 finds it; with an embedder on the database, the hybrid search ranks by
meaning too) and whose metadata keeps the app, the user, the session, the event's id,
author and timestamp, and its content exactly as ADK serialises it. Its category,
`adk/memory/<app and user>/<session>` (names hashed), is indexed: a search reads only the
user's memories, and also checks the app and user in the metadata before ranking, so one
user's memories never reach another's search, whatever the query. A fact's id is derived
from (app, user, event id): adding a session again rewrites its memories instead of
duplicating them; `delete_memory` leaves a tombstone so a later `add_session_to_memory`
of the same session does not bring the deleted memory back.

Adding a session costs one transaction: its facts are built on the caller's side (the
events' JSON is the snapshot, so no deep copy of the events is needed), and the reads
inside the transaction select by category (indexed, and unique to the app, user and
session through the hash) and then check the names in Python, which costs a fraction of
a metadata filter in SQL.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from google.adk.memory import _utils
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from ..protocols import Database, SearchMode, has_vector_search
from ..records import Fact
from ._any_db import AnyBackend, AnyDbOrPath

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

__all__ = ["SqlmemMemoryService"]

#: How many memories one search returns (ADK's in-memory service returns ten).
TOP_K = 10
_UNKNOWN_SESSION = "__unknown_session_id__"


def _fact_id(app: str, user: str, event_id: str, kind: str = "memory") -> str:
    return "adk-" + _hashed(kind, app, user, event_id) + _hashed(event_id, kind)


def _hashed(*names: str) -> str:
    key = "\x00".join(names).encode("utf-8", "surrogatepass")
    return hashlib.sha256(key).hexdigest()[:20]


def _memories_of(app: str, user: str, session_id: str | None = None) -> str:
    """The category of a user's memories (of one session): indexed, and a prefix of the
    session's, so listing a session's or searching a user's memories reads only those."""
    user_part = f"adk/memory/{_hashed(app, user)}"
    return user_part if session_id is None else f"{user_part}/{_hashed(session_id)}"


def _deleted_of(app: str, user: str) -> str:
    return f"adk/deleted/{_hashed(app, user)}"


def _words(event: Event) -> str:
    """The searchable text of an event, NFC-normalised as queries are (decomposed text,
    as some keyboards and macOS file names give it, then matches its composed form)."""
    if event.content is None or not event.content.parts:
        return ""
    text = " ".join(part.text for part in event.content.parts if part.text)
    return unicodedata.normalize("NFC", text)


class _MemoryStore:
    """The synchronous half, run on the service's runner thread."""

    def __init__(self, open_db: Callable[[], Database]) -> None:
        self._open_db = open_db

    @property
    def db(self) -> Database:
        """The database (the service opens a path it was given on first use)."""
        return self._open_db()

    def _scope(self, app: str, user: str, kind: str) -> dict[str, Any]:
        return {"adk_app": app, "adk_user": user, "adk_kind": kind}

    def _in_category(self, category: str, scope: dict[str, Any]) -> list[Fact]:
        """The facts of `category` whose metadata holds `scope` (names checked here: a
        category is already unique to its names but for a hash collision)."""
        found = self.db.facts.list(category=category, limit=1_000_000)
        return [f for f in found if all(f.metadata.get(k) == v for k, v in scope.items())]

    def _deleted(self, app: str, user: str) -> set[str]:
        """The user's deleted memories (their own indexed category: usually none)."""
        facts = self._in_category(_deleted_of(app, user), self._scope(app, user, "deleted"))
        return {fact.metadata["adk_event_id"] for fact in facts}

    def add(self, app: str, user: str, session_id: str, facts: list[Fact], replace: bool) -> None:
        """Stores `facts` (see `memory_facts`) but those of deleted memories; `replace`:
        the session's memories become exactly these."""
        with self.db.atomic():
            deleted = self._deleted(app, user)
            if deleted:
                facts = [f for f in facts if f.metadata["adk_event_id"] not in deleted]
            if replace:
                scope = self._scope(app, user, "memory") | {"adk_session": session_id}
                kept = {fact.id for fact in facts}
                old = self._in_category(_memories_of(app, user, session_id), scope)
                stale = [f.id for f in old if f.id not in kept]
                if stale:
                    self.db.facts.delete_many(stale)
            if facts:
                self.db.facts.index_many(facts)

    def memory_facts(
        self, app: str, user: str, session_id: str, events: Sequence[Event]
    ) -> list[Fact]:
        """The facts of the events that have words: built from the events' JSON, they
        are a snapshot, whatever the caller does to the events afterwards."""
        return [self._fact(app, user, session_id, e) for e in events if _words(e).strip()]

    def _fact(self, app: str, user: str, session_id: str, event: Event) -> Fact:
        assert event.content is not None
        metadata = self._scope(app, user, "memory") | {
            "adk_session": session_id,
            "adk_event_id": event.id,
            "adk_author": event.author,
            "adk_timestamp": event.timestamp,
            "adk_content": event.content.model_dump_json(exclude_none=True),
        }
        return Fact(
            id=_fact_id(app, user, event.id),
            content=_words(event),
            source="adk",
            category=_memories_of(app, user, session_id),
            metadata=metadata,
        )

    def search(self, app: str, user: str, query: str) -> list[Fact]:
        query = unicodedata.normalize("NFC", query)
        if not query.strip():
            return []
        facts = self.db.facts
        mode: SearchMode = "hybrid" if has_vector_search(facts) else "any"
        return facts.search(
            query,
            TOP_K,
            mode=mode,
            category=_memories_of(app, user),
            metadata=self._scope(app, user, "memory"),
        )

    def delete(self, app: str, user: str, memory_id: str) -> None:
        with self.db.atomic():
            fact_id = _fact_id(app, user, memory_id)
            if self.db.facts.get(fact_id) is None:
                return
            self.db.facts.delete(fact_id)
            tombstone = Fact(
                id=_fact_id(app, user, memory_id, "deleted"),
                content=f"deleted ADK memory {memory_id}",
                source="adk",
                category=_deleted_of(app, user),
                metadata=self._scope(app, user, "deleted") | {"adk_event_id": memory_id},
            )
            self.db.facts.index(tombstone)


def _entry(fact: Fact) -> MemoryEntry:
    meta = fact.metadata
    return MemoryEntry(
        id=meta["adk_event_id"],
        content=types.Content.model_validate_json(meta["adk_content"]),
        author=meta.get("adk_author"),
        timestamp=_utils.format_timestamp(meta["adk_timestamp"]),
    )


class SqlmemMemoryService(BaseMemoryService):
    """ADK's long-term memory in one sqlmem database (any backend): `db_or_path` is a
    database (shared, never closed here) or a path the service opens and closes with
    `close()`."""

    def __init__(self, db_or_path: AnyDbOrPath) -> None:
        self._backend = AnyBackend(db_or_path, "SqlmemMemoryService")
        self._store = _MemoryStore(lambda: self._backend.db)

    async def close(self) -> None:
        await self._backend.aclose()

    async def add_session_to_memory(self, session: Session) -> None:
        app, user, sid = session.app_name, session.user_id, session.id
        facts = self._store.memory_facts(app, user, sid, session.events)
        await self._backend.write(self._store.add, app, user, sid, facts, True)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        sid = session_id or _UNKNOWN_SESSION
        facts = self._store.memory_facts(app_name, user_id, sid, events)
        await self._backend.write(self._store.add, app_name, user_id, sid, facts, False)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        facts = await self._backend.run(self._store.search, app_name, user_id, query)
        return SearchMemoryResponse(memories=[_entry(fact) for fact in facts])

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        if memory_id:
            await self._backend.write(self._store.delete, app_name, user_id, memory_id)
