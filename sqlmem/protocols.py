"""The public store protocols. Third parties may implement them; sqlmem ships two of each
(SQLite and in-memory), and every helper in `sqlmem.context` is written against these."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from .records import Fact, Message

__all__ = ["FactStore", "HistoryStore", "SearchMode"]

SearchMode = Literal["any", "all", "raw"]


@runtime_checkable
class HistoryStore(Protocol):
    """Conversation messages per session, with a compaction summary per session."""

    def append(self, session_id: str, message: Message) -> int: ...

    def append_many(self, session_id: str, messages: Iterable[Message]) -> list[int]: ...

    def get_recent(self, session_id: str, n: int, *, pair_safe: bool = True) -> list[Message]: ...

    def pop(self, session_id: str) -> Message | None: ...

    def around(
        self, session_id: str, seq: int, *, before: int = 0, after: int = 1
    ) -> list[Message]: ...

    def get_all(self, session_id: str, *, include_archived: bool = False) -> list[Message]: ...

    def count(self, session_id: str) -> int: ...

    def set_summary(self, session_id: str, text: str) -> None: ...

    def get_summary(self, session_id: str) -> str: ...

    def compact(self, session_id: str, keep_last: int, summary: str | None = None) -> int: ...

    def purge(self, session_id: str) -> None: ...

    def sessions(self) -> list[str]: ...

    def search(
        self, query: str, *, session_id: str | None = None, top_k: int = 10
    ) -> list[Message]: ...


@runtime_checkable
class FactStore(Protocol):
    """Long-term facts, searched with BM25 and filtered before ranking."""

    def index(self, fact: Fact) -> str: ...

    def index_many(self, facts: Iterable[Fact]) -> list[str]: ...

    def get(self, fact_id: str) -> Fact | None: ...

    def delete(self, fact_id: str) -> None: ...

    def delete_many(self, fact_ids: Iterable[str]) -> int: ...

    def count(self) -> int: ...

    def __len__(self) -> int: ...

    def search(
        self,
        query: str,
        top_k: int = 10,
        *,
        mode: SearchMode = "any",
        tags: Sequence[str] | None = None,
        category: str | None = None,
        source: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[Fact]: ...

    def search_by_metadata(self, key: str, value: Any) -> builtins.list[Fact]: ...

    def list(
        self,
        *,
        tags: Sequence[str] | None = None,
        category: str | None = None,
        source: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> builtins.list[Fact]: ...

    def tags(self) -> dict[str, int]: ...

    def categories(self) -> builtins.list[str]: ...
