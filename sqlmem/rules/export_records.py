"""The records of an export (history, documents, the frameworks' rows), built alike by
every backend, and the paging every export reads its tables with
(`sqlmem.stores.transfer.export_from` puts them in order).

A backend reads its rows and decodes what its storage encodes (PostgreSQL's text codec);
the record a row becomes is decided here, once, so the two backends' files are the same
record for record.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from .export_blobs import b64
from .export_format import iso_from_ms

__all__ = [
    "PAGE",
    "checkpoint_record",
    "checkpoint_write_record",
    "document_record",
    "kv_record",
    "message_record",
    "paged",
    "revision_record",
    "summary_record",
]

#: Rows read per query while exporting; each page is its own short read, so a large export
#: neither holds a reader open while the caller writes nor loads the database into memory.
PAGE = 1000

K = TypeVar("K")


def paged(
    read: Callable[[K, int], Sequence[Any]], first: K, key: Callable[[Any], K], page: int = PAGE
) -> Iterator[Any]:
    """Every row `read(after, page)` gives, `page` rows at a time by key: `read` returns
    the rows after `after` in key order, at most `page` of them."""
    after = first
    while True:
        rows = read(after, page)
        yield from rows
        if len(rows) < page:
            return
        after = key(rows[-1])


def message_record(row: Sequence[Any]) -> dict[str, Any]:
    """A message row (session_id, seq, archived, role, content, name, tool_call_id,
    tool_calls JSON, is_error, metadata JSON, created_at ms), texts decoded."""
    return {
        "type": "message",
        "session_id": row[0],
        "seq": row[1],
        "archived": bool(row[2]),
        "role": row[3],
        "content": row[4],
        "name": row[5],
        "tool_call_id": row[6],
        "tool_calls": json.loads(row[7]),
        "is_error": bool(row[8]),
        "metadata": json.loads(row[9]),
        "created_at": iso_from_ms(row[10]),
    }


def summary_record(session_id: str, summary: str, archived_seq: int) -> dict[str, Any]:
    """A session's summary and archive boundary."""
    return {
        "type": "summary",
        "session_id": session_id,
        "summary": summary,
        "archived_seq": archived_seq,
    }


def document_record(
    path: str, content: str, enabled: Any, order: int, revision: int, created: int, updated: int
) -> dict[str, Any]:
    """A workspace document, its content decoded."""
    return {
        "type": "document",
        "path": path,
        "content": content,
        "enabled": bool(enabled),
        "sort_order": order,
        "revision": revision,
        "created_at": iso_from_ms(created),
        "updated_at": iso_from_ms(updated),
    }


def revision_record(path: str, revision: int, content: str, updated: int) -> dict[str, Any]:
    """A kept revision of a document, its content decoded."""
    return {
        "type": "revision",
        "path": path,
        "revision": revision,
        "content": content,
        "updated_at": iso_from_ms(updated),
    }


def kv_record(
    namespace: str,
    key: str,
    value: bytes,
    created: int,
    updated: int,
    ttl: int | None,
    expires: int | None,
) -> dict[str, Any]:
    """A live key-value row of the frameworks' stores (texts decoded, value as bytes)."""
    return {
        "type": "kv",
        "namespace": namespace,
        "key": key,
        "value": b64(value),
        "created_at": iso_from_ms(created),
        "updated_at": iso_from_ms(updated),
        "ttl_ms": ttl,
        "expires_at": None if expires is None else iso_from_ms(expires),
    }


def checkpoint_record(row: Sequence[Any]) -> dict[str, Any]:
    """A LangGraph checkpoint row (thread_id, checkpoint_ns, checkpoint_id,
    parent_checkpoint_id, checkpoint_type, checkpoint bytes, metadata_type, metadata bytes,
    run_id), texts decoded."""
    return {
        "type": "checkpoint",
        "thread_id": row[0],
        "checkpoint_ns": row[1],
        "checkpoint_id": row[2],
        "parent_checkpoint_id": row[3],
        "checkpoint_type": row[4],
        "checkpoint": b64(row[5]),
        "metadata_type": row[6],
        "metadata": b64(row[7]),
        "run_id": row[8],
    }


def checkpoint_write_record(row: Sequence[Any]) -> dict[str, Any]:
    """A LangGraph pending write row (thread_id, checkpoint_ns, checkpoint_id, task_id,
    idx, channel, value_type, value bytes, task_path), texts decoded."""
    return {
        "type": "checkpoint_write",
        "thread_id": row[0],
        "checkpoint_ns": row[1],
        "checkpoint_id": row[2],
        "task_id": row[3],
        "idx": row[4],
        "channel": row[5],
        "value_type": row[6],
        "value": b64(row[7]),
        "task_path": row[8],
    }
