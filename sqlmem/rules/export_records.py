"""The history records of an export, built alike by every backend, and the paging every
export reads its tables with (`sqlmem.stores.transfer.export_from` puts them in order).

A backend reads its rows and decodes what its storage encodes (PostgreSQL's text codec);
the record a row becomes is decided here, once, so the two backends' files are the same
record for record.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from .export_format import iso_from_ms

__all__ = ["PAGE", "message_record", "paged", "summary_record"]

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
