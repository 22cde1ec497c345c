"""The records users write and read: messages, tool calls and facts.

Input is validated by pydantic; records read back from the database are built with
`model_construct` (no validation), because the engine wrote them itself and reading is
the hot path. Timestamps are stored as integer milliseconds since the epoch (UTC).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .errors import InvalidArgumentError

__all__ = [
    "EPOCH",
    "MAX_METADATA_DEPTH",
    "Fact",
    "Message",
    "Role",
    "ToolCall",
    "build_fact",
    "build_tool_call",
    "check_category",
    "dt_from_ms",
    "dt_to_ms",
    "dumps_json",
    "encode_metadata_json",
    "facts_from_rows",
    "message_from_values",
    "messages_from_rows",
    "now_ms",
]

Role = Literal["system", "user", "assistant", "tool"]

#: Segments of letters, digits, '-' and '_' joined by '/': one regex call per category.
_CATEGORY_PATH = re.compile(r"[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*")
_SURROGATE = re.compile("[\ud800-\udfff]")


def now_ms() -> int:
    """Milliseconds since the epoch (UTC), from the integer clock (no float, no datetime)."""
    return time.time_ns() // 1_000_000


def dt_to_ms(value: datetime) -> int:
    """Milliseconds since the epoch; a naive datetime is taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    delta = value - _EPOCH
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: The unix epoch (UTC): `EPOCH + timedelta(0, 0, 0, ms)` is a stored timestamp inlined.
EPOCH = _EPOCH


#: Below 2**42 ms (the year 2109), `fromtimestamp(ms / 1000)` is exact to the millisecond:
#: ms / 1000 is off by at most half an ulp (< 0.5 µs below 2**33 s), and fromtimestamp
#: rounds to the nearest microsecond. It is ~2x cheaper than epoch + timedelta, which
#: stays the exact path for every other value (tests/unit/test_hot_paths.py checks both).
_FROMTIMESTAMP_EXACT_BELOW = 1 << 42
_fromtimestamp = datetime.fromtimestamp
_UTC = timezone.utc


#: Datetimes by their stored milliseconds. Building one costs ~0.3 µs, a third of a whole
#: Message read back; an agent re-reads most of its window every turn (get_recent), and a
#: batch of records shares one timestamp, so most reads find theirs here (~0.05 µs).
#: datetimes are immutable, so sharing them is safe; bounded by clearing.
_DATETIMES: dict[int, datetime] = {}
_DATETIMES_MAX = 16_384


def dt_from_ms(ms: int) -> datetime:
    value = _DATETIMES.get(ms)
    if value is None:
        value = _new_datetime(ms)
    return value


def _new_datetime(ms: int) -> datetime:
    if 0 <= ms < _FROMTIMESTAMP_EXACT_BELOW:
        value = _fromtimestamp(ms / 1000, _UTC)
    else:
        value = _EPOCH + timedelta(0, 0, 0, ms)
    if len(_DATETIMES) >= _DATETIMES_MAX:
        _DATETIMES.clear()
    _DATETIMES[ms] = value
    return value


#: One encoder for every write: `json.dumps` with options builds a new JSONEncoder per
#: call, which is about half its cost for small values (tags, metadata). `encode` keeps
#: no state between calls, so sharing it between threads is safe.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps_json(value: Any) -> str:
    """Compact JSON as stored; non-ASCII kept as is (smaller, still valid JSON)."""
    return _ENCODER.encode(value)


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


#: How deeply metadata may nest: the metadata object is level 1, each object or array
#: inside it one more. Deeper values are refused (InvalidArgumentError naming the field;
#: a ValueError when a record is built) by every store and filter alike. Why a limit:
#: without one a value nested ~1,000 levels raised RecursionError from Python's JSON
#: encoder (issue 23 item 13), its exact depth depending on the caller's stack, and
#: SQLite's JSON functions refuse more than 1,000 levels. 64 is far beyond real metadata
#: and far inside both.
MAX_METADATA_DEPTH = 64


def encode_metadata_json(value: Any, field: str) -> str:
    """`value` (metadata, or a metadata filter) as stored JSON text, or
    InvalidArgumentError naming `field`: not JSON, or nested past `MAX_METADATA_DEPTH`.

    The depth walk runs only when the text holds more than `MAX_METADATA_DEPTH` brackets
    (two `str.count` calls otherwise: usual metadata costs nothing more).
    """
    try:
        text = dumps_json(value)
    except RecursionError as exc:
        raise _too_deep(field) from exc
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{field} must be JSON-serialisable: {exc}") from None
    if text.count("{") + text.count("[") > MAX_METADATA_DEPTH and _deeper_than(
        value, MAX_METADATA_DEPTH
    ):
        raise _too_deep(field)
    return text


def _too_deep(field: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"{field} nests deeper than {MAX_METADATA_DEPTH} levels (sqlmem.records.MAX_METADATA_DEPTH)"
    )


def _deeper_than(value: Any, limit: int) -> bool:
    """True when `value` nests more than `limit` containers deep (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


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


# Reading back what the engine wrote is the hot path: records are built without
# validation. This is what `model_construct` does, minus its per-field bookkeeping:
# a new instance, its `__dict__`, and pydantic's three slots set through their
# descriptors (about 1 µs for a Message instead of ~5.5 µs; `_construct_ok()` checks at
# import that the result equals `model_construct`'s, else we fall back to it).
_MESSAGE_FIELDS = frozenset(Message.model_fields)
_FACT_FIELDS = frozenset(Fact.model_fields)
_TOOL_CALL_FIELDS = frozenset(ToolCall.model_fields)
_new = object.__new__
_set = object.__setattr__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_FAST = True


def _unvalidated(cls: Any, fields: frozenset[str], values: dict[str, Any]) -> Any:
    if not _FAST:
        return cls.model_construct(**values)
    record = _new(cls)
    _set(record, "__dict__", values)
    _set_fields_set(record, set(fields))
    _set_extra(record, None)
    _set_private(record, None)
    return record


_MESSAGE_FIELDS_SET = set(_MESSAGE_FIELDS)


def message_from_values(values: dict[str, Any]) -> Message:
    """A Message from a dict holding every field (trusted values), without validation.

    `_unvalidated` inlined: it runs once per message read (get_recent of 50 rows).
    """
    if not _FAST:
        return Message.model_construct(**values)
    record = _new(Message)
    _set(record, "__dict__", values)
    _set_fields_set(record, _MESSAGE_FIELDS_SET.copy())
    _set_extra(record, None)
    _set_private(record, None)
    return record


def messages_from_rows(
    rows: Iterable[Sequence[Any]],
    session_id: str | None,
    scores: Sequence[float] | None = None,
) -> list[Message]:
    """Messages from stored rows, without validation (the engine wrote them itself).

    A row is (seq, role, content, name, tool_call_id, tool_calls JSON, is_error,
    metadata JSON, created_at ms), the order of `history_sql.MESSAGE_COLUMNS`. For
    get_recent(50) building the records costs more than the SQL, so everything a row
    needs is inlined in one loop: each call or lookup avoided per row shows.
    """
    out: list[Message] = []
    append = out.append
    fast, new, set_dict, fields = _FAST, _new, _set, _MESSAGE_FIELDS_SET
    set_fields_set, set_extra, set_private = _set_fields_set, _set_extra, _set_private
    cached_datetime, new_datetime, loads = _DATETIMES.get, _new_datetime, json.loads
    score = None
    for i, (seq, role, content, name, call_id, calls, error, meta, created) in enumerate(rows):
        if scores is not None:
            score = scores[i]
        values = {
            "role": role,
            "content": content,
            "name": name,
            "tool_call_id": call_id,
            "tool_calls": [] if calls == "[]" else _tool_calls(calls),
            "is_error": error != 0,
            "metadata": {} if meta == "{}" else loads(meta),
            "created_at": cached_datetime(created) or new_datetime(created),
            "seq": seq,
            "session_id": session_id,
            "score": score,
        }
        if fast:  # `message_from_values` inlined
            record = new(Message)
            set_dict(record, "__dict__", values)
            set_fields_set(record, fields.copy())
            set_extra(record, None)
            set_private(record, None)
        else:
            record = Message.model_construct(**values)
        append(record)
    return out


_FACT_FIELDS_SET = set(_FACT_FIELDS)


def facts_from_rows(rows: Iterable[Sequence[Any]], *, ranked: bool) -> list[Fact]:
    """Facts from stored rows, without validation (the engine wrote them itself).

    A row is (id, content, source, category, tags JSON, metadata JSON, created_at ms,
    updated_at ms), then with `ranked` its bm25 score (lower is better; the Fact gets it
    negated, higher is better). `build_fact` inlined in one loop, as `messages_from_rows`:
    a search builds up to top_k facts on every call (~1.1 -> ~0.8 µs a fact).
    """
    out: list[Fact] = []
    append = out.append
    fast, new, set_dict, fields = _FAST, _new, _set, _FACT_FIELDS_SET
    set_fields_set, set_extra, set_private = _set_fields_set, _set_extra, _set_private
    cached_datetime, new_datetime, loads = _DATETIMES.get, _new_datetime, json.loads
    score = None
    for row in rows:
        if ranked:
            fact_id, content, source, category, tags, meta, created, updated, rank = row
            score = -rank
        else:
            fact_id, content, source, category, tags, meta, created, updated = row
        values = {
            "id": fact_id,
            "content": content,
            "source": source,
            "tags": [] if tags == "[]" else _tag_list(tags),
            "category": category,
            "metadata": {} if meta == "{}" else loads(meta),
            "created_at": cached_datetime(created) or new_datetime(created),
            "updated_at": cached_datetime(updated) or new_datetime(updated),
            "score": score,
        }
        if fast:  # `_unvalidated` inlined
            record = new(Fact)
            set_dict(record, "__dict__", values)
            set_fields_set(record, fields.copy())
            set_extra(record, None)
            set_private(record, None)
        else:
            record = Fact.model_construct(**values)
        append(record)
    return out


def _tool_calls(text: str) -> list[ToolCall]:
    if text == "[]":
        return []
    return [build_tool_call(t["id"], t["name"], t["arguments"]) for t in json.loads(text)]


def build_tool_call(id: str, name: str, arguments: str) -> ToolCall:
    return _unvalidated(  # type: ignore[no-any-return]
        ToolCall, _TOOL_CALL_FIELDS, {"id": id, "name": name, "arguments": arguments}
    )


#: Decoded tag lists by their stored JSON text. Facts share a small set of tag lists
#: (json.loads is ~1 µs, a lookup and a list copy ~0.1 µs); bounded by clearing.
_TAG_LISTS: dict[str, tuple[str, ...]] = {}
_TAG_LISTS_MAX = 4096


def _tag_list(text: str) -> list[str]:
    if text == "[]":
        return []
    cached = _TAG_LISTS.get(text)
    if cached is None:
        cached = tuple(json.loads(text))
        if len(_TAG_LISTS) >= _TAG_LISTS_MAX:
            _TAG_LISTS.clear()
        _TAG_LISTS[text] = cached
    return list(cached)


def build_fact(
    fact_id: str,
    content: str,
    source: str,
    category: str,
    tags: str,
    metadata: str,
    created_ms: int,
    updated_ms: int,
    score: float | None = None,
) -> Fact:
    """A Fact from its stored values (JSON text, unix ms), without validation.

    For one fact (`get`, the in-memory twin); many come from `facts_from_rows`, which this
    calls so that both stores build facts one way.
    """
    row = (fact_id, content, source, category, tags, metadata, created_ms, updated_ms)
    if score is None:
        return facts_from_rows([row], ranked=False)[0]
    return facts_from_rows([(*row, -score)], ranked=True)[0]


def _construct_ok() -> bool:
    """True when our builders give exactly what `model_construct` gives."""
    global _FAST
    _FAST = True
    try:
        fact = build_fact("i", "c", "s", "a/b", '["t"]', '{"k":1}', 1, 2, 0.5)
        call = build_tool_call("x", "f", "{}")
        message = message_from_values(
            {
                "role": "tool",
                "content": "c",
                "name": "n",
                "tool_call_id": "x",
                "tool_calls": [call],
                "is_error": True,
                "metadata": {"k": [1]},
                "created_at": None,
                "seq": 3,
                "session_id": "s",
                "score": None,
            }
        )
        pairs = [
            (fact, Fact.model_construct(**fact.__dict__)),
            (call, ToolCall.model_construct(**call.__dict__)),
            (message, Message.model_construct(**message.__dict__)),
        ]
        return all(
            a == b
            and a.model_dump() == b.model_dump()
            and repr(a) == repr(b)
            and a.model_fields_set == b.model_fields_set
            for a, b in pairs
        )
    except Exception:  # pragma: no cover - a pydantic release changed its internals
        return False


_FAST = _construct_ok()
