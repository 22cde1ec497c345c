"""sqlmem behind the OpenAI Agents SDK: `SqlmemSession`, its `Session` protocol.

    from sqlmem.adapters.openai_agents import SqlmemSession
    session = SqlmemSession("user-42", "memory.db")   # instead of SQLiteSession(...)
    await Runner.run(agent, "Hi", session=session)

Storage: one item is one message of the session in the agent's memory file. The item
itself, exactly as the SDK gave it, is the message's metadata (`{"openai_agents_item":
item}`), so it reads back deep-equal whatever its type (messages, function calls and their
outputs, reasoning, hosted tool calls ...). Its text (message text, tool arguments and
outputs, reasoning summaries) is the message's content, so `db.history.search` finds it,
and its role follows the item: function calls are assistant messages carrying the call,
their outputs `tool` messages answering it, so sqlmem's own pair-safe windows and
compaction keep a call with its output.

Encoding: JSON's. Tuples read back as lists; an item that JSON cannot hold (NaN,
infinity, bytes, other objects) or nested deeper than 63 levels is refused with
`InvalidArgumentError` before anything is written: `add_items` stores all of its items or
none.

Messages written to the same session by other code (`db.history.append`) read back as
the SDK's easy input messages: `{"role": ..., "content": ...}`, a tool result as a
`function_call_output`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import InvalidArgumentError
from ..extras import needs_extra
from ..protocols import Database

with needs_extra("openai-agents", __name__):
    from agents.memory.session import _CompactionSnapshot
    from agents.memory.session_settings import SessionSettings
    from agents.run_context import RunContextWrapper

from ..records import Message, Role, ToolCall
from ..rules.checks import check_session_id
from ..sqlite.db import MemoryDB
from ..sqlite.stores.session_items import read_items
from ._backend import Backend, DbOrPath
from .openai_agents_compaction import read_compaction_snapshot

__all__ = ["ITEM_KEY", "SqlmemSession", "item_from_message", "message_from_item"]

#: The metadata key holding the SDK's item.
ITEM_KEY = "openai_agents_item"

#: Keys whose string values (anywhere in an item) are its searchable text.
_TEXT_KEYS = frozenset(
    {"content", "text", "output", "arguments", "refusal", "query", "queries", "code", "input"}
)
_ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}


class SqlmemSession:
    """The SDK's `Session` protocol over one session of a sqlmem database.

    `db_or_path`: any sqlmem database or an `AsyncMemoryDB` (shared; `close()` leaves it open) or a
    path (opened here, closed by `close()`). `limit`: how many of the latest items
    `get_items()` returns when called without one (None: all); the SDK reads it as
    `session_settings.limit`.

    Every method takes the SDK's optional `wrapper=` (its run context, passed to sessions
    whose four methods all accept it) and ignores it: what is stored does not depend on
    the run, and accepting it lets wrapping sessions (encryption, compaction) hand their
    context through to us unchanged.
    """

    session_settings: SessionSettings | None

    def __init__(self, session_id: str, db_or_path: DbOrPath, *, limit: int | None = None):
        self.session_id = check_session_id(session_id)
        if limit is not None:
            _check_limit(limit)
        self._backend = Backend(db_or_path, type(self).__name__)
        self.session_settings = SessionSettings(limit=limit)

    @property
    def db(self) -> Any:
        """The database the session lives in (its history, facts, maintenance)."""
        return self._backend.db

    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[Any]:
        """The latest `limit` items oldest first, exactly (no pair repair: the SDK does
        its own). None: `session_settings.limit`, and all items when that is None too.
        0 gives none; a negative limit gives all (as the SDK's SQLiteSession does)."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and _check_limit(limit) < 0:
            limit = None
        elif limit == 0:
            return []
        return await self._backend.run_db(_items, self.session_id, limit)

    async def add_items(
        self, items: list[Any], *, wrapper: RunContextWrapper[Any] | None = None
    ) -> None:
        """Append the items in order, in one transaction: all of them or none."""
        messages = [message_from_item(item, f"items[{i}]") for i, item in enumerate(items)]
        await self._backend.write_db(_append_many, self.session_id, messages)

    async def pop_item(self, *, wrapper: RunContextWrapper[Any] | None = None) -> Any | None:
        """Remove and return the newest item (None for an empty session)."""
        message = await self._backend.write_db(_pop, self.session_id)
        return None if message is None else item_from_message(message)

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Remove every item of the session (and its sqlmem summary) from the file."""
        await self._backend.write_db(_purge, self.session_id)

    async def _get_compaction_snapshot(
        self, limit: int, *, prune_prefix: Callable[[Any], bool] | None = None
    ) -> _CompactionSnapshot | None:
        """The hook the SDK's `OpenAIResponsesCompactionSession` reads to compact a run's
        exchange atomically (see `openai_agents_compaction`). None, so the SDK keeps the
        history, when a subclass changes how items are read or written: the snapshot
        would bypass that change."""
        if any(
            getattr(type(self), name) is not getattr(SqlmemSession, name)
            for name in ("get_items", "add_items", "pop_item")
        ):
            return None
        return await read_compaction_snapshot(
            self._backend,
            self.session_id,
            limit,
            message_from_item,
            item_from_message,
            prune_prefix,
        )

    def close(self) -> None:
        """Waits for calls in flight; closes the database if the session opened it.
        Idempotent; later calls raise `StoreClosedError`."""
        self._backend.close()

    def __repr__(self) -> str:
        return f"<SqlmemSession {self.session_id!r} in {self._backend.path!r}>"


def _check_limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidArgumentError(f"limit must be an int or None, not {type(limit).__name__}")
    return limit


# -- items <-> messages ---------------------------------------------------------------------


def message_from_item(item: Any, name: str = "item") -> Message:
    """The message storing one SDK item (see the module docstring); InvalidArgumentError
    naming `name` for an item that is not a JSON object sqlmem can store."""
    if not isinstance(item, Mapping):
        raise InvalidArgumentError(f"{name} must be a dict, not {type(item).__name__}")
    kind, call_id = item.get("type"), item.get("call_id")
    role: Role = "assistant"
    tool_calls: list[ToolCall] = []
    tool_call_id = ""
    if kind == "function_call" and _all_str(call_id, item.get("name"), item.get("arguments")):
        tool_calls = [ToolCall(id=str(call_id), name=item["name"], arguments=item["arguments"])]
    elif isinstance(kind, str) and kind.endswith("_output"):
        role = "tool"
        tool_call_id = call_id if isinstance(call_id, str) else ""
    elif isinstance(item.get("role"), str):
        role = _ROLES.get(item["role"], "assistant")
    try:
        return Message(
            role=role,
            content=_text(item),
            tool_call_id=tool_call_id,
            tool_calls=tool_calls,
            metadata={ITEM_KEY: dict(item)},
        )
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"{name}: {exc}") from exc


def item_from_message(message: Message) -> Any:
    """The SDK item a message stores; messages written by other code read back as easy
    input messages (a tool result as a `function_call_output`)."""
    item = message.metadata.get(ITEM_KEY)
    if isinstance(item, dict):
        return item
    return _easy_item(message.role, message.content, message.tool_call_id)


def _items(db: Database, session_id: str, limit: int | None) -> list[Any]:
    """The session's items, decoded on the runner's thread (as the SDK's SQLiteSession
    decodes on its worker), not on the event loop. A SQLite file reads the four columns
    an item needs (`read_items`); other backends read the messages."""
    if isinstance(db, MemoryDB):
        return [_item_from_row(row) for row in read_items(db.engine, session_id, limit)]
    if limit is None:
        messages = db.history.get_all(session_id)
    else:
        messages = db.history.get_recent(session_id, limit, pair_safe=False)
    return [item_from_message(message) for message in messages]


def _append_many(db: Any, session_id: str, messages: list[Message]) -> None:
    db.history.append_many(session_id, messages)


def _pop(db: Any, session_id: str) -> Message | None:
    message: Message | None = db.history.pop(session_id)
    return message


def _purge(db: Any, session_id: str) -> None:
    db.history.purge(session_id)


#: Metadata is compact JSON text we wrote, usually exactly `{"openai_agents_item":
#: ITEM}`: the item is decoded in place (`raw_decode`), without `json.loads`' checks,
#: whitespace scans and the wrapping dict: half the cost of a get_items.
_PREFIX = "{" + json.dumps(ITEM_KEY) + ":"
_decoder = json.JSONDecoder()
_raw_decode = _decoder.raw_decode


def _item_from_row(row: Sequence[Any]) -> Any:
    """`item_from_message` for a `read_items` row (role, content, tool_call_id, metadata
    JSON text), without building the Message."""
    role, content, tool_call_id, metadata = row
    if metadata.startswith(_PREFIX):
        item, end = _raw_decode(metadata, len(_PREFIX))
        if end == len(metadata) - 1 and type(item) is dict:  # the only key: it is the item
            return item
    if metadata != "{}":
        item = _decoder.decode(metadata).get(ITEM_KEY)
        if isinstance(item, dict):
            return item
    return _easy_item(role, content, tool_call_id)


def _easy_item(role: str, content: str, tool_call_id: str) -> dict[str, Any]:
    if role == "tool":
        return {"type": "function_call_output", "call_id": tool_call_id, "output": content}
    return {"role": role, "content": content}


def _all_str(*values: Any) -> bool:
    return all(isinstance(v, str) for v in values)


def _text(item: Mapping[str, Any]) -> str:
    """The searchable text of an item: the strings under its text-bearing keys, in order,
    one per line. Iterative: an item too deep for the store is refused there, not here
    by a RecursionError."""
    found: list[str] = []
    stack: list[tuple[Any, bool]] = [(item, False)]
    while stack:
        value, wanted = stack.pop()
        if isinstance(value, str):
            if wanted and value:
                found.append(value)
        elif isinstance(value, Mapping):
            stack.extend((v, k in _TEXT_KEYS) for k, v in list(value.items())[::-1])
        elif isinstance(value, (list, tuple)):
            stack.extend((v, wanted) for v in reversed(value))
    return "\n".join(found)
