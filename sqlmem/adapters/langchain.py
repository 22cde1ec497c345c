"""sqlmem behind LangChain: a chat message history and a byte store.

    from sqlmem.adapters.langchain import SqlmemByteStore, SqlmemChatMessageHistory
    history = SqlmemChatMessageHistory("user-42", "memory.db")  # any BaseChatMessageHistory
    store = SqlmemByteStore("memory.db", namespace="embeddings-cache")  # any ByteStore

`SqlmemChatMessageHistory`: one LangChain message is one message of the session. The
message itself, as `message_to_dict` gives it, is the sqlmem message's metadata
(`{"langchain_message": ...}`), so every type (human, AI with tool calls and usage, tool
with artifact and status, system, function, chat, chunks, remove) reads back equal; its
text is the content (searchable with `db.history.search`), AI tool calls become sqlmem
tool calls and tool messages answer them, so sqlmem's pair-safe windows and compaction
keep them together. A message JSON cannot hold (bytes or NaN in `additional_kwargs`, an
artifact that is an object) is refused with `InvalidArgumentError`, and `add_messages`
stores all of its messages or none.

`SqlmemByteStore`: LangChain's `BaseStore[str, bytes]` over the file's key-value table
(`sqlmem.sqlite.frameworks.kv`), one namespace per store: keys are any string (NUL, any plane; a
lone surrogate is refused), values bytes kept as they are; each call is one transaction.

Both answer the sync methods on the caller's thread and the async ones on a private
thread pool, so the event loop never waits for the write lock or the disk.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from ..errors import InvalidArgumentError
from ..extras import needs_extra
from ..protocols import Database

with needs_extra("langchain", __name__):
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        FunctionMessage,
        SystemMessage,
        ToolMessage,
        message_to_dict,
        messages_from_dict,
    )
    from langchain_core.stores import BaseStore

from ..records import Message, Role, ToolCall
from ..rules.checks import check_session_id, check_text
from ._backend import Backend, DbOrPath
from .ports import KeyValuePort

__all__ = [
    "MESSAGE_KEY",
    "SqlmemByteStore",
    "SqlmemChatMessageHistory",
    "langchain_message",
    "sqlmem_message",
]

#: The metadata key holding LangChain's message (its `message_to_dict` form).
MESSAGE_KEY = "langchain_message"

#: A `ChatMessage`'s free-form role, as sqlmem's (anything else: "user").
_CHAT_ROLES: dict[str, Role] = {
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
}


class SqlmemChatMessageHistory(BaseChatMessageHistory):
    """LangChain's `BaseChatMessageHistory` over one session of a sqlmem database.

    `db_or_path`: any sqlmem database or an `AsyncMemoryDB` (shared; `close()` leaves it
    open) or a path (opened on first use, closed by `close()`): constructing one never
    touches the disk, so a session factory may build it inside the event loop.
    """

    def __init__(self, session_id: str, db_or_path: DbOrPath) -> None:
        self.session_id = check_session_id(session_id)
        self._backend = Backend(db_or_path, "SqlmemChatMessageHistory")

    @property
    def db(self) -> Database:
        """The database the history lives in."""
        return self._backend.db

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every active message of the session, oldest first."""
        return _langchain_messages(self._backend.db.history.get_all(self.session_id))

    async def aget_messages(self) -> list[BaseMessage]:
        found = await self._backend.run_db(_get_all, self.session_id)
        return _langchain_messages(found)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append in order, in one transaction: all of them or none."""
        self._backend.db.history.append_many(self.session_id, _sqlmem_messages(messages))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        converted = _sqlmem_messages(messages)
        await self._backend.write_db(_append_many, self.session_id, converted)

    def clear(self) -> None:
        """Remove the session's messages (and its sqlmem summary) from the file."""
        self._backend.db.history.purge(self.session_id)

    async def aclear(self) -> None:
        await self._backend.write_db(_purge, self.session_id)

    def close(self) -> None:
        """Waits for async calls in flight; closes the database if this object opened
        it. Idempotent."""
        self._backend.close()


def _get_all(db: Database, session_id: str) -> list[Message]:
    return db.history.get_all(session_id)


def _append_many(db: Database, session_id: str, messages: list[Message]) -> None:
    db.history.append_many(session_id, messages)


def _purge(db: Database, session_id: str) -> None:
    db.history.purge(session_id)


class SqlmemByteStore(BaseStore[str, bytes]):
    """LangChain's byte store (`BaseStore[str, bytes]`) in a sqlmem database.

    `namespace` keeps stores sharing one file apart (any string). In the file's `kv` table
    it is tagged (`TAG + namespace`), so no other kind of store can reach its keys.
    """

    #: The kv namespace of a byte store is this tag and its own namespace.
    TAG = "langchain.bytes:"

    def __init__(self, db_or_path: DbOrPath, *, namespace: str = "default") -> None:
        check_text(namespace, "namespace")
        self.namespace = namespace
        self._ns = self.TAG + namespace
        self._backend = Backend(db_or_path, "SqlmemByteStore")

    @functools.cached_property
    def _kv(self) -> KeyValuePort:
        """Built on first use, on the thread that makes it: a path opens only then."""
        return self._backend.storage.kv

    @property
    def db(self) -> Database:
        return self._backend.db

    def mget(self, keys: Sequence[str]) -> list[bytes | None]:
        return self._kv.get_many(self._ns, keys)

    async def amget(self, keys: Sequence[str]) -> list[bytes | None]:
        return await self._backend.run(self.mget, keys)

    def mset(self, key_value_pairs: Sequence[tuple[str, bytes]]) -> None:
        """Store every pair in one transaction (all or none)."""
        self._kv.set_many(self._ns, key_value_pairs)

    async def amset(self, key_value_pairs: Sequence[tuple[str, bytes]]) -> None:
        await self._backend.write(self.mset, key_value_pairs)

    def mdelete(self, keys: Sequence[str]) -> None:
        self._kv.delete_many(self._ns, keys)

    async def amdelete(self, keys: Sequence[str]) -> None:
        await self._backend.write(self.mdelete, keys)

    def yield_keys(self, *, prefix: str | None = None) -> Iterator[str]:
        """Keys starting with `prefix`, in code point order, read a page at a time."""
        yield from self._kv.keys(self._ns, prefix or "")

    async def ayield_keys(self, *, prefix: str | None = None) -> AsyncIterator[str]:
        keys = self.yield_keys(prefix=prefix)  # a generator: it runs on the runner's thread
        while True:
            page = await self._backend.run(_next_page, keys)
            for key in page:
                yield key
            if not page:
                return

    def close(self) -> None:
        """Waits for async calls in flight; closes the database if this object opened
        it. Idempotent."""
        self._backend.close()


def _next_page(keys: Iterator[str], size: int = 1000) -> list[str]:
    page = []
    for key in keys:
        page.append(key)
        if len(page) == size:
            break
    return page


# -- messages <-> sqlmem messages -------------------------------------------------------------


def sqlmem_message(message: BaseMessage, name: str = "message") -> Message:
    """The sqlmem message storing one LangChain message (see the module docstring)."""
    if not isinstance(message, BaseMessage):
        raise InvalidArgumentError(
            f"{name} must be a langchain BaseMessage, not {type(message).__name__}"
        )
    tool_calls: list[ToolCall] = []
    tool_call_id = ""
    if isinstance(message, AIMessage):
        tool_calls = [_tool_call(call, name) for call in message.tool_calls]
    elif isinstance(message, ToolMessage):
        tool_call_id = message.tool_call_id
    role = _role(message)
    try:
        return Message(
            role=role,
            content=message.text,
            tool_call_id=tool_call_id,
            tool_calls=tool_calls,
            metadata={MESSAGE_KEY: message_to_dict(message)},
        )
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"{name}: {exc}") from exc


def langchain_message(message: Message) -> BaseMessage:
    """The LangChain message a sqlmem message stores; messages written by other code
    read back as the message class of their role."""
    stored = message.metadata.get(MESSAGE_KEY)
    if isinstance(stored, dict):
        return messages_from_dict([stored])[0]
    kind = {"user": "human", "assistant": "ai", "system": "system", "tool": "tool"}
    data: dict[str, Any] = {"content": message.content}
    if message.role == "tool":
        data["tool_call_id"] = message.tool_call_id
    return messages_from_dict([{"type": kind[message.role], "data": data}])[0]


def _role(message: BaseMessage) -> Role:
    """Chunks are subclasses of their message class, so they map alike."""
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, (ToolMessage, FunctionMessage)):
        return "tool"
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, ChatMessage):
        return _CHAT_ROLES.get(message.role, "user")
    return "user"


def _tool_call(call: Any, name: str) -> ToolCall:
    try:
        arguments = json.dumps(call["args"], ensure_ascii=False, allow_nan=False)
        return ToolCall(id=call.get("id") or "", name=call["name"], arguments=arguments)
    except (TypeError, ValueError, KeyError) as exc:
        raise InvalidArgumentError(f"{name}.tool_calls: {exc}") from exc


def _sqlmem_messages(messages: Sequence[BaseMessage]) -> list[Message]:
    if isinstance(messages, BaseMessage):
        raise InvalidArgumentError("messages must be a sequence of BaseMessage")
    return [sqlmem_message(m, f"messages[{i}]") for i, m in enumerate(messages)]


def _langchain_messages(found: list[Message]) -> list[BaseMessage]:
    return [langchain_message(m) for m in found]
