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

import math
import re
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from .errors import InvalidArgumentError
from .rules.chains import check_key
from .rules.encoding import MAX_METADATA_DEPTH, dt_from_ms, dt_to_ms, encode_metadata_json
from .rules.identity import fingerprint

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "LAYERS",
    "MAX_KIND_LEN",
    "MAX_METADATA_DEPTH",
    "MAX_REFERENCE_LEN",
    "Fact",
    "Layer",
    "Message",
    "Role",
    "ToolCall",
    "check_category",
    "check_kind",
    "check_references",
    "check_unit_interval",
]

Role = Literal["system", "user", "assistant", "tool"]
#: A memory item's layer (SPEC 12): recent events, durable facts, stable know-how.
Layer = Literal["episodic", "semantic", "procedural"]
LAYERS: tuple[Layer, ...] = ("episodic", "semantic", "procedural")
MAX_KIND_LEN = 64
MAX_REFERENCE_LEN = 512

#: Segments of letters, digits, '-' and '_' joined by '/': one regex call per category.
_CATEGORY_PATH = re.compile(r"[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*")
_SURROGATE = re.compile("[\ud800-\udfff]")
_KIND = re.compile(rf"[A-Za-z0-9_-]{{0,{MAX_KIND_LEN}}}")


class _Record(BaseModel):
    """Strict fields, and a refusal as an `InvalidArgumentError` naming the field.

    pydantic raises its ValidationError from wherever a model is built, so the four ways
    in (the constructor and the three `model_validate*`) translate it here, keeping it as
    `__cause__` (the export reader words it for its file's records from there).
    """

    model_config = ConfigDict(strict=True, extra="forbid")

    def __init__(self, /, **data: Any) -> None:
        try:  # BaseModel.__init__'s one statement, without a second call and **data
            self.__pydantic_validator__.validate_python(data, self_instance=self)
        except ValidationError as exc:
            raise _refusal(type(self).__name__, exc) from exc

    # Marked as pydantic's own: it then validates nested records and `model_validate`
    # input itself, instead of calling this wrapper from inside (which would nest
    # refusals in one another); every way in still ends in `_refusal` once.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @classmethod
    def model_validate(cls, obj: Any, **options: Any) -> Self:
        try:
            return super().model_validate(obj, **options)
        except ValidationError as exc:
            raise _refusal(cls.__name__, exc) from exc

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **options: Any) -> Self:
        try:
            return super().model_validate_json(json_data, **options)
        except ValidationError as exc:
            raise _refusal(cls.__name__, exc) from exc

    @classmethod
    def model_validate_strings(cls, obj: Any, **options: Any) -> Self:
        try:
            return super().model_validate_strings(obj, **options)
        except ValidationError as exc:
            raise _refusal(cls.__name__, exc) from exc


def _refusal(model: str, exc: ValidationError) -> InvalidArgumentError:
    """One line per problem, each naming its field (`Message.tool_calls.0.id: ...`)."""
    return InvalidArgumentError("; ".join(_problem(model, err) for err in exc.errors()))


def _problem(model: str, err: ErrorDetails) -> str:
    error = err.get("ctx", {}).get("error")
    if isinstance(error, ValueError):  # ours, raised by a validator: it names the field
        text = str(error)
    elif err["type"].endswith("_type"):  # a wrong type: say which
        text = f"{err['msg']} (got {type(err['input']).__name__})"
    else:
        text = err["msg"]
    if not err["loc"]:  # a whole-record check (lone surrogates, metadata depth)
        return text
    return f"{model}.{'.'.join(str(part) for part in err['loc'])}: {text}"


def _datetime_or_iso_text(value: Any) -> Any:
    """A timestamp is a datetime or ISO 8601 text (an export file's form); never a number,
    digits in a str, bytes or a date, which pydantic would take as unix seconds or ms by
    their size, or as midnight."""
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return value  # pydantic parses it, or refuses it naming the field
    kind = type(value).__name__
    raise ValueError(f"must be a datetime or ISO 8601 text, not {kind} {value!r:.40}")


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
    """A record's JSON field: serialisable, not too deep, UTF-8 (a ValueError otherwise,
    naming `field`)."""
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


def check_kind(value: str) -> str:
    """A kind is a short label: up to 64 letters, digits, '-' and '_' ('' for none)."""
    if not _KIND.fullmatch(value):
        raise ValueError(
            f"kind must be at most {MAX_KIND_LEN} letters, digits, '-' and '_'; got {value!r:.80}"
        )
    return value


def check_unit_interval(value: float, field: str) -> float:
    """Confidence and salience: a finite number within [0, 1] (NaN compares false with
    everything, so it would silently fail every filter; refused instead)."""
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"{field} must be a finite number within [0, 1]; got {value!r}")
    return float(value)


def check_references(value: list[str]) -> list[str]:
    for ref in value:
        if len(ref) > MAX_REFERENCE_LEN:
            raise ValueError(
                f"references hold strings of at most {MAX_REFERENCE_LEN} characters; "
                f"got one of {len(ref)}"
            )
    return value


class ToolCall(_Record):
    """One function call requested by the assistant; `arguments` is JSON text, kept verbatim."""

    id: str
    name: str
    arguments: str = ""

    @model_validator(mode="after")
    def _utf8(self) -> ToolCall:
        for field in ("id", "name", "arguments"):
            _no_surrogates(getattr(self, field), f"ToolCall.{field}")
        return self


class Message(_Record):
    """One conversation message. `seq`, `session_id` and `score` are filled on output."""

    role: Role
    content: str = ""
    name: str = ""
    tool_call_id: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    is_error: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = Field(default=None, strict=False)
    seq: int | None = None
    session_id: str | None = None
    score: float | None = None

    _timestamp = field_validator("created_at", mode="before")(_datetime_or_iso_text)

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


class Fact(_Record):
    """One long-term fact. An empty `id` is replaced by a generated one.

    0.2 memory-item state (SPEC 12): `layer`, `kind`, `confidence`, `salience`,
    `references`, `expires_at`; `fingerprint` and `hits` are output only: the fingerprint
    is always computed from `content` (here, and again by the store on write), `hits` is
    counted by the store (what a caller puts there is ignored by `index` and `remember`,
    so a fact read back can be written again as it is).

    Facts that change: `key` names a slot ("user.city") whose facts form one chain per
    layer, ordered by `valid_from` (None: not given, the fact is valid from `created_at`;
    a fact placed in a chain reads back with it filled); `valid_to` and `superseded_by`
    are output only, filled by the store from the chain (the next fact's `valid_from`
    and id; None for the live one). A fact is live at T when valid_from <= T < valid_to.
    """

    id: str = ""
    content: str
    source: str = ""
    tags: list[str] = Field(default_factory=list)
    category: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = Field(default=None, strict=False)
    updated_at: datetime | None = Field(default=None, strict=False)
    layer: Layer = "semantic"
    kind: str = ""
    confidence: float = 1.0
    salience: float = 0.5
    references: list[str] = Field(default_factory=list)
    expires_at: datetime | None = Field(default=None, strict=False)
    fingerprint: str = ""
    hits: int = 1
    key: str = ""
    valid_from: datetime | None = Field(default=None, strict=False)
    valid_to: datetime | None = Field(default=None, strict=False)
    superseded_by: str | None = None
    score: float | None = None

    @field_validator("content")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("category")
    @classmethod
    def _category(cls, value: str) -> str:
        return check_category(value)

    _timestamps = field_validator(
        "created_at", "updated_at", "expires_at", "valid_from", "valid_to", mode="before"
    )(_datetime_or_iso_text)

    @field_validator("created_at", "updated_at", "expires_at", "valid_from", "valid_to")
    @classmethod
    def _ms_precision(cls, value: datetime | None) -> datetime | None:
        return _truncate_ms(value)

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        return check_kind(value)

    @field_validator("confidence", "salience")
    @classmethod
    def _unit(cls, value: float, info: ValidationInfo) -> float:
        return check_unit_interval(value, str(info.field_name))

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        return check_key(value)

    @field_validator("references")
    @classmethod
    def _references(cls, value: list[str]) -> list[str]:
        return check_references(value)

    @field_validator("hits")
    @classmethod
    def _hits(cls, value: int) -> int:
        if not 1 <= value <= 2**62:
            raise ValueError(f"hits must be from 1 to 2**62; got {value}")
        return value

    @model_validator(mode="after")
    def _fill(self) -> Fact:
        if not self.id:
            self.id = uuid.uuid4().hex
        for field in ("id", "content", "source", "category"):
            _no_surrogates(getattr(self, field), f"Fact.{field}")
        for tag in self.tags:
            _no_surrogates(tag, "Fact.tags")
        for ref in self.references:
            _no_surrogates(ref, "Fact.references")
        _json_without_surrogates(self.metadata, "Fact.metadata")
        # Output only, always the content's: a record compares equal to itself read back.
        self.fingerprint = fingerprint(self.content)
        return self
