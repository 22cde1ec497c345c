"""The export records of the frameworks' tables (format_version 2): key-value rows and
LangGraph checkpoints with their pending writes. Shared by every backend's export and
import; nothing here touches a database.

    {"type": "kv", "namespace": "langchain.bytes:default", "key": "k",
     "value": "<base64>", "created_at": "...", "updated_at": "...",
     "ttl_ms": null, "expires_at": null}
    {"type": "checkpoint", "thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "...",
     "parent_checkpoint_id": null, "checkpoint_type": "msgpack",
     "checkpoint": "<base64>", "metadata_type": "msgpack", "metadata": "<base64>",
     "run_id": null}
    {"type": "checkpoint_write", "thread_id": "t", "checkpoint_ns": "",
     "checkpoint_id": "...", "task_id": "...", "idx": 0, "channel": "messages",
     "value_type": "msgpack", "value": "<base64>", "task_path": ""}

Values are bytes (the byte store's values, LangGraph's serde output), so they travel as
base64 and come back byte for byte. Expired kv rows are not exported (every read skips
them already). Timestamps are the export's ISO 8601 UTC with milliseconds, the precision
stored.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .checks import check_text
from .encoding import dt_to_ms

__all__ = [
    "BLOB_RECORD_TYPES",
    "CheckpointRecordRow",
    "CheckpointWriteRow",
    "KVRecordRow",
    "b64",
    "stamp_ms",
    "validate_blob_record",
]


@dataclass(frozen=True)
class KVRecordRow:
    namespace: str
    key: str
    value: bytes
    created_ms: int
    updated_ms: int
    ttl_ms: int | None
    expires_ms: int | None


@dataclass(frozen=True)
class CheckpointRecordRow:
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    checkpoint_type: str
    checkpoint: bytes
    metadata_type: str
    metadata: bytes
    run_id: str | None


@dataclass(frozen=True)
class CheckpointWriteRow:
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    task_id: str
    idx: int
    channel: str
    value_type: str
    value: bytes
    task_path: str


_KV = ("namespace", "key", "value", "created_at", "updated_at", "ttl_ms", "expires_at")
_CHECKPOINT = (
    *("thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id"),
    *("checkpoint_type", "checkpoint", "metadata_type", "metadata", "run_id"),
)
_WRITE = (
    *("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel"),
    *("value_type", "value", "task_path"),
)
#: The record types this module reads, with their fields.
BLOB_RECORD_TYPES: dict[str, tuple[str, ...]] = {
    "kv": _KV,
    "checkpoint": _CHECKPOINT,
    "checkpoint_write": _WRITE,
}

_INT64 = 2**63 - 1


def b64(value: bytes) -> str:
    """Bytes as the export writes them."""
    return base64.b64encode(value).decode("ascii")


def validate_blob_record(kind: str, fields: Mapping[str, Any]) -> Any:
    """The row of a kv / checkpoint / checkpoint_write record (its "type" removed);
    ValueError naming the field for a bad one."""
    extra = set(fields) - set(BLOB_RECORD_TYPES[kind])
    if extra:
        raise ValueError(f"unknown field(s) in a {kind} record: {', '.join(sorted(extra))}")
    f = fields
    if kind == "kv":
        ttl = _optional_int(f.get("ttl_ms"), "ttl_ms", 0)
        return KVRecordRow(
            _text(f.get("namespace"), "namespace"),
            _text(f.get("key"), "key"),
            _bytes(f.get("value"), "value"),
            stamp_ms(f.get("created_at"), "created_at"),
            stamp_ms(f.get("updated_at"), "updated_at"),
            ttl,
            None if f.get("expires_at") is None else stamp_ms(f["expires_at"], "expires_at"),
        )
    if kind == "checkpoint":
        return CheckpointRecordRow(
            _text(f.get("thread_id"), "thread_id"),
            _text(f.get("checkpoint_ns", ""), "checkpoint_ns"),
            _text(f.get("checkpoint_id"), "checkpoint_id", empty=False),
            _optional_text(f.get("parent_checkpoint_id"), "parent_checkpoint_id"),
            _text(f.get("checkpoint_type"), "checkpoint_type"),
            _bytes(f.get("checkpoint"), "checkpoint"),
            _text(f.get("metadata_type"), "metadata_type"),
            _bytes(f.get("metadata"), "metadata"),
            _optional_text(f.get("run_id"), "run_id"),
        )
    return CheckpointWriteRow(
        _text(f.get("thread_id"), "thread_id"),
        _text(f.get("checkpoint_ns", ""), "checkpoint_ns"),
        _text(f.get("checkpoint_id"), "checkpoint_id", empty=False),
        _text(f.get("task_id"), "task_id"),
        _int(f.get("idx"), "idx", -_INT64),
        _text(f.get("channel"), "channel"),
        _text(f.get("value_type"), "value_type"),
        _bytes(f.get("value"), "value"),
        _text(f.get("task_path", ""), "task_path"),
    )


def _text(value: Any, name: str, *, empty: bool = True) -> str:
    if not isinstance(value, str) or (not empty and not value):
        raise ValueError(f"{name} must be a{'' if empty else ' non-empty'} string")
    check_text(value, name)
    return value


def _optional_text(value: Any, name: str) -> str | None:
    return None if value is None else _text(value, name)


def _int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= _INT64:
        raise ValueError(f"{name} must be an integer from {minimum} to 2**63 - 1")
    return value


def _optional_int(value: Any, name: str, minimum: int) -> int | None:
    return None if value is None else _int(value, name, minimum)


def _bytes(value: Any, name: str) -> bytes:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be base64 text")
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise ValueError(f"{name} is not valid base64") from None


def stamp_ms(value: Any, name: str) -> int:
    """An ISO 8601 timestamp with its time zone, as ms since the epoch."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be ISO 8601 text")
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{name}: not an ISO 8601 timestamp: {value[:40]!r}") from None
    if when.tzinfo is None:
        raise ValueError(f"{name} must carry its time zone (the export writes +00:00)")
    return dt_to_ms(when)
