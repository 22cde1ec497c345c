"""Argument checks every backend applies, written once.

A store takes what a user (or a model) passes it: each check returns the value it accepts
or raises `InvalidArgumentError` naming the argument, before anything is read or written.
Records are mutable after pydantic validated them, so a message is checked again here: a
wrong type would otherwise be stored as something that reads back different, or fail deep
inside with a TypeError.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..errors import InvalidArgumentError
from ..records import Message, ToolCall
from .encoding import dumps_json, encode_metadata_json
from .filters import check_limit

__all__ = [
    "MAX_SESSION_ID_LENGTH",
    "check_around",
    "check_at_least",
    "check_history_search",
    "check_message",
    "check_session_id",
    "check_text",
    "encode_metadata",
    "encode_tool_calls",
    "search_off_error",
]

MAX_SESSION_ID_LENGTH = 512

_ROLES = frozenset(("system", "user", "assistant", "tool"))


def check_session_id(session_id: Any, name: str = "session_id") -> str:
    if not isinstance(session_id, str):
        raise InvalidArgumentError(f"{name} must be a str, not {type(session_id).__name__}")
    if not session_id or len(session_id) > MAX_SESSION_ID_LENGTH:
        raise InvalidArgumentError(
            f"{name} must be 1-{MAX_SESSION_ID_LENGTH} characters, got {len(session_id)}"
        )
    check_text(session_id, name)
    return session_id


def check_text(value: Any, name: str) -> str:
    """A str that UTF-8 can hold (no lone surrogates)."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a str, not {type(value).__name__}")
    if value.isascii():  # the usual case, and ~10x cheaper than encoding
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            f"{name} contains a lone surrogate, which UTF-8 cannot store"
        ) from None
    return value


def check_at_least(value: Any, name: str, minimum: int) -> int:
    """A whole-number setting (a window, a budget, a number of messages) that must be at
    least `minimum`: the rule of `check_limit` (any integer type, numpy's too, never a
    bool), plus the bound; the message names the setting."""
    number = check_limit(value, name)
    if number < minimum:
        raise InvalidArgumentError(f"{name} must be >= {minimum}, got {number}")
    return number


def check_around(seq: Any, before: Any, after: Any) -> tuple[int, int, int]:
    """`HistoryStore.around`'s numbers, checked alike by every backend: integers (never
    bools), `before` and `after` >= 0. `seq` is returned as given (any integer: one that
    no message has gives `[]`), the counts capped like every limit."""
    if isinstance(seq, bool):
        raise InvalidArgumentError("seq must be an integer, not bool")
    try:
        seq = operator.index(seq)
    except TypeError:
        raise InvalidArgumentError(f"seq must be an integer, not {type(seq).__name__}") from None
    before, after = check_limit(before, "before"), check_limit(after, "after")
    for name, value in (("before", before), ("after", after)):
        if value < 0:
            raise InvalidArgumentError(f"{name} must be >= 0, got {value}")
    return seq, before, after


def check_message(message: Any, name: str = "message") -> Message:
    if not isinstance(message, Message):
        raise InvalidArgumentError(f"{name} must be a sqlmem.Message, not {type(message).__name__}")
    if message.role not in _ROLES:  # only possible through model_construct
        raise InvalidArgumentError(f"{name}.role must be one of {sorted(_ROLES)}")
    # Records are mutable after validation: re-check what would otherwise be stored as a
    # wrong type (and read back different) or fail deep inside with a TypeError.
    # append_many checks every message: empty lists and dicts skip the per-item generator.
    for field in ("content", "name", "tool_call_id"):
        if not isinstance(getattr(message, field), str):
            raise InvalidArgumentError(f"{name}.{field} must be a str")
    calls = message.tool_calls
    if not isinstance(calls, list) or (calls and not all(isinstance(c, ToolCall) for c in calls)):
        raise InvalidArgumentError(f"{name}.tool_calls must be a list of sqlmem.ToolCall")
    if not isinstance(message.is_error, bool):
        raise InvalidArgumentError(f"{name}.is_error must be a bool")
    meta = message.metadata
    if not isinstance(meta, dict) or (meta and not all(isinstance(k, str) for k in meta)):
        raise InvalidArgumentError(f"{name}.metadata must be a dict with str keys")
    if message.created_at is not None and not isinstance(message.created_at, datetime):
        raise InvalidArgumentError(f"{name}.created_at must be a datetime or None")
    return message


def check_history_search(enabled: bool, query: Any, session_id: Any, top_k: Any) -> int:
    """The arguments of `HistoryStore.search`, checked alike by every backend; returns
    `top_k` as an int (<= 0: the caller returns `[]`)."""
    if not enabled:
        raise search_off_error()
    if not isinstance(query, str):  # lone surrogates are dropped by the compiler
        raise InvalidArgumentError(f"query must be a str, not {type(query).__name__}")
    if session_id is not None:
        check_session_id(session_id)
    return check_limit(top_k, "top_k")


def search_off_error() -> InvalidArgumentError:
    return InvalidArgumentError(
        "search: history search is off for this store (StoreConfig.history_search=False); "
        "open it with history_search=True to index and search messages"
    )


def encode_tool_calls(tool_calls: Sequence[ToolCall]) -> str:
    if not tool_calls:
        return "[]"
    return dumps_json([{"id": t.id, "name": t.name, "arguments": t.arguments} for t in tool_calls])


def encode_metadata(metadata: dict[str, Any], name: str = "message.metadata") -> str:
    if not metadata:
        return "{}"
    return encode_metadata_json(metadata, name)  # JSON, and nested at most 64 levels
