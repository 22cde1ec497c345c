"""The records users write and read: messages, tool calls and facts (SPEC 4).

Input is validated here, strictly: a field takes its declared type and nothing pydantic
would convert into it (`b"x"` or `5` for a str, `"1"` or `1` for a bool, `"3"` for an
int, a tuple for a list), because a converted value reads back different from what the
caller holds. Timestamps alone also take ISO 8601 text (an export file's form). A refusal
is an `InvalidArgumentError` naming the field, never a pydantic ValidationError, so
`except sqlmem.SqlmemError` catches every refusal.

Records read back from storage are built without validation by `sqlmem.rules.rows`; how
values are stored (JSON text, ms timestamps) is `sqlmem.rules.encoding`.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .rules.encoding import MAX_METADATA_DEPTH, dt_from_ms, dt_to_ms, encode_metadata_json

__all__ = [
    "MAX_METADATA_DEPTH",
    "Fact",
    "Message",
    "Role",
    "ToolCall",
    "check_category",
]

Role = Literal["system", "user", "assistant", "tool"]

#: Segments of letters, digits, '-' and '_' joined by '/': one regex call per category.
_CATEGORY_PATH = re.compile(r"[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _truncate_ms(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    try:
        return dt_from_ms(dt_to_ms(value))
    except OverflowError:  # pydantic wraps ValueError, not OverflowError
        raise ValueError(f"datetime {value!r} is out of range once converted to UTC") from None


def _no_surrogates(value: str, field: str) -> str:
    if _SURROGATE.search(value):
        raise ValueError(f"{field} contains a lone surrogate, which UTF-8 cannot store")
    return value


def _json_without_surrogates(value: Any, field: str) -> None:
    """A record's JSON field: serialisable, not too deep, UTF-8 (ValueError otherwise:
    InvalidArgumentError is one, which pydantic reports as a ValidationError)."""
    try:
        encode_metadata_json(value, field).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{field} contains a lone surrogate, which UTF-8 cannot store") from None


def check_category(value: str) -> str:
    """A category is '' or a path of segments like 'project/sqlmem'."""
    if value == "":
        return value
    if not _CATEGORY_PATH.fullmatch(value):
        raise ValueError(
            "category must be '' or segments of letters, digits, '-' and '_' joined by '/' "
            f"(no leading '/', no '..', no empty segment); got {value!r}"
        )
    return value


class ToolCall(BaseModel):
    """One function call requested by the assistant; `arguments` is JSON text, kept verbatim."""

    model_config = ConfigDict(frozen=False, extra="forbid")

    id: str
    name: str
    arguments: str = ""

    @model_validator(mode="after")
    def _utf8(self) -> ToolCall:
        for field in ("id", "name", "arguments"):
            _no_surrogates(getattr(self, field), f"ToolCall.{field}")
        return self


class Message(BaseModel):
    """One conversation message. `seq`, `session_id` and `score` are filled on output."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str = ""
    name: str = ""
    tool_call_id: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    is_error: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None
    seq: int | None = None
    session_id: str | None = None
    score: float | None = None

    @field_validator("created_at")
    @classmethod
    def _ms_precision(cls, value: datetime | None) -> datetime | None:
        return _truncate_ms(value)

    @model_validator(mode="after")
    def _utf8(self) -> Message:
        for field in ("content", "name", "tool_call_id"):
            _no_surrogates(getattr(self, field), f"Message.{field}")
        _json_without_surrogates(self.metadata, "Message.metadata")
        return self


class Fact(BaseModel):
    """One long-term fact. An empty `id` is replaced by a generated one."""

    model_config = ConfigDict(extra="forbid")

    id: str = ""
    content: str
    source: str = ""
    tags: list[str] = Field(default_factory=list)
    category: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    score: float | None = None

    @field_validator("content")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("Fact.content must not be empty")
        return value

    @field_validator("category")
    @classmethod
    def _category(cls, value: str) -> str:
        return check_category(value)

    @field_validator("created_at", "updated_at")
    @classmethod
    def _ms_precision(cls, value: datetime | None) -> datetime | None:
        return _truncate_ms(value)

    @model_validator(mode="after")
    def _fill(self) -> Fact:
        if not self.id:
            self.id = uuid.uuid4().hex
        for field in ("id", "content", "source", "category"):
            _no_surrogates(getattr(self, field), f"Fact.{field}")
        for tag in self.tags:
            _no_surrogates(tag, "Fact.tags")
        _json_without_surrogates(self.metadata, "Fact.metadata")
        return self
