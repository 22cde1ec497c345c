"""The vector records of the export format (rules/export_format.py): a fact's, and a
message's, each its stored embedding as base64 of float32 little-endian.

    {"type": "vector", "id": "<fact id>", "model": "...", "dim": 256, "data": "..."}
    {"type": "message_vector", "session_id": "chat:1", "seq": 4, "model": "...",
     "dim": 256, "content_hash": "<sha256 hex>", "data": "..."}

Message vectors make a file format version 3 (`MESSAGE_VECTORS_FORMAT_VERSION`): a reader
of version 2 refuses the header rather than importing the records before the first
message vector and then stopping. An export without message vectors stays version 2, so
older readers keep reading what they can read whole.

An import checks a vector (finite, of the stated size, not all zeros) and normalises it
again before storing it (the file may come from anywhere); a vector whose fact or message
is not there is skipped. A message vector carries the hash of the text it was computed
from (`search.vectors.content_key` of model and text): an import merges messages by
(session_id, seq) and keeps a message the target already holds, which may say something
else than the file's, so the vector is stored only when the hash matches the text the
target's message holds.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any

from .checks import check_session_id

__all__ = [
    "MESSAGE_VECTORS_FORMAT_VERSION",
    "MessageVectorRow",
    "VectorRow",
    "message_vector_record",
    "message_vector_row",
    "vector_row",
]

#: The format version of an export holding message vectors.
MESSAGE_VECTORS_FORMAT_VERSION = 3

_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class VectorRow:
    """The stored embedding of fact `id`'s content under `model` (float32 LE bytes)."""

    id: str
    model: str
    dim: int
    data: bytes


@dataclass(frozen=True)
class MessageVectorRow:
    """The stored embedding of message (`session_id`, `seq`)'s text under `model`."""

    session_id: str
    seq: int
    model: str
    dim: int
    content_hash: str
    data: bytes


def message_vector_record(
    session_id: str, seq: int, model: str, dim: int, content_hash: str, blob: bytes
) -> dict[str, Any]:
    """A message vector as the export writes it."""
    return {
        "type": "message_vector",
        "session_id": session_id,
        "seq": seq,
        "model": model,
        "dim": dim,
        "content_hash": content_hash,
        "data": base64.b64encode(blob).decode("ascii"),
    }


def vector_row(fields: dict[str, Any]) -> VectorRow:
    _only(fields, "vector", {"id", "model", "dim", "data"})
    fact = fields.get("id")
    if not isinstance(fact, str) or not fact:
        raise ValueError("vector record: id must be a non-empty string")
    model, dim, raw = _payload(fields, "vector")
    return VectorRow(fact, model, dim, raw)


def message_vector_row(fields: dict[str, Any], max_seq: int) -> MessageVectorRow:
    _only(fields, "message_vector", {"session_id", "seq", "model", "dim", "content_hash", "data"})
    session_id = check_session_id(fields.get("session_id"))
    seq = fields.get("seq")
    if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= max_seq:
        raise ValueError("message_vector record: seq must be an integer from 1 to 2**62")
    digest = fields.get("content_hash")
    if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
        raise ValueError("message_vector record: content_hash must be 64 lowercase hex digits")
    model, dim, raw = _payload(fields, "message_vector")
    return MessageVectorRow(session_id, seq, model, dim, digest, raw)


def _only(fields: dict[str, Any], kind: str, names: set[str]) -> None:
    extra = set(fields) - names
    if extra:
        raise ValueError(f"unknown field(s) in a {kind} record: {', '.join(sorted(extra))}")


def _payload(fields: dict[str, Any], kind: str) -> tuple[str, int, bytes]:
    model, dim, data = (fields.get(k) for k in ("model", "dim", "data"))
    if not isinstance(model, str) or not model:
        raise ValueError(f"{kind} record: model must be a non-empty string")
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= 65536:
        raise ValueError(f"{kind} record: dim must be an int in [1, 65536]")
    if not isinstance(data, str):
        raise ValueError(f"{kind} record: data must be base64 text")
    try:
        raw = base64.b64decode(data.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise ValueError(f"{kind} record: data is not valid base64") from None
    if len(raw) != 4 * dim:
        raise ValueError(f"{kind} record: data holds {len(raw)} bytes, not 4 * dim = {4 * dim}")
    return model, dim, raw
