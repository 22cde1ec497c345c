"""Export of a SQLite memory database: the records of the format in rules/export_format.py.

Rows are read in pages by key (statements in history_transfer_sql.py and facts_sql.py),
each page in its own short read through the engine's reader pool.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..rules.encoding import now_ms
from ..rules.export_format import (
    EXPORT_FORMAT,
    FORMAT_VERSION,
    READABLE_FORMAT_VERSION,
    Progress,
    chain_fields,
    iso_from_ms,
    iso_ms,
)
from .docs_transfer import export_documents
from .facts_sql import EXPORT_FACTS_PAGE
from .history_transfer_sql import EXPORT_MESSAGES_PAGE, EXPORT_SESSIONS_PAGE
from .kv_transfer import export_checkpoints, export_kv
from .message_vectors_transfer import export_message_vectors, has_message_vectors
from .migrations import read_user_version
from .vectors_transfer import export_vectors

if TYPE_CHECKING:
    from .db import MemoryDB

__all__ = ["export_records"]

#: Rows read per query while exporting; each page is its own short read.
_PAGE = 1000


def export_records(db: MemoryDB, progress: Progress | None = None) -> Iterator[dict[str, Any]]:
    """The header, then every message, session summary, message vector, fact, fact vector,
    document,
    kept document revision, kv row, checkpoint and pending write of `db`, as dicts.

    Rows are read in pages of 1,000 by key, each page in its own short read, so a large
    export neither holds a reader open while the caller writes nor loads the file into
    memory. Writes made while an export runs may or may not be included.
    `progress(n)` is called every 10,000 records.
    """
    with db.engine.read() as conn:
        version = read_user_version(conn)
        changing = bool(conn.execute(_ANY_CHANGING).fetchall())
    message_vectors = has_message_vectors(db)
    newer = changing or message_vectors
    yield {
        "format": EXPORT_FORMAT,
        "format_version": READABLE_FORMAT_VERSION if newer else FORMAT_VERSION,
        "schema_version": version,
        "exported_at": iso_ms(datetime.now(timezone.utc)),
    }
    records = _chain(
        _messages(db), _summaries(db),
        export_message_vectors(db) if message_vectors else iter(()),
        _facts(db), export_vectors(db), export_documents(db), export_kv(db),
        export_checkpoints(db),
    )  # fmt: skip
    for count, record in enumerate(records, start=1):
        yield record
        if progress is not None and count % 10_000 == 0:
            progress(count)


def _chain(*parts: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for part in parts:
        yield from part


def _messages(db: MemoryDB) -> Iterator[dict[str, Any]]:
    after: tuple[str, int] = ("", 0)
    while True:
        with db.engine.read() as conn:
            rows: list[Any] = conn.execute(EXPORT_MESSAGES_PAGE, (*after, _PAGE)).fetchall()
        for row in rows:
            yield {
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
        if len(rows) < _PAGE:
            return
        after = (rows[-1][0], rows[-1][1])


def _summaries(db: MemoryDB) -> Iterator[dict[str, Any]]:
    after = ""
    while True:
        with db.engine.read() as conn:
            rows: list[Any] = conn.execute(EXPORT_SESSIONS_PAGE, (after, _PAGE)).fetchall()
        for session_id, summary, archived_seq in rows:
            yield {
                "type": "summary",
                "session_id": session_id,
                "summary": summary,
                "archived_seq": archived_seq,
            }
        if len(rows) < _PAGE:
            return
        after = rows[-1][0]


#: Whether any fact has a key, a valid time or a link (then the export is format 3):
#: probes of the partial indexes that hold only such facts.
_ANY_CHANGING = (
    "SELECT 1 WHERE EXISTS (SELECT 1 FROM facts WHERE chain IS NOT NULL)"
    " OR EXISTS (SELECT 1 FROM facts WHERE valid_from IS NOT NULL)"
)


def _facts(db: MemoryDB) -> Iterator[dict[str, Any]]:
    """Live facts (an expired one is gone for every read, export included)."""
    after = 0
    while True:
        with db.engine.read() as conn:
            params = {"after": after, "limit": _PAGE, "now": now_ms()}
            rows: list[Any] = conn.execute(EXPORT_FACTS_PAGE, params).fetchall()
        for row in rows:
            (_, fact_id, content, source, category, tags, meta, created, updated,
             layer, kind, confidence, salience, refs, expires, fingerprint, hits,
             key, valid_from, valid_to, successor) = row  # fmt: skip
            yield {
                "type": "fact",
                "id": fact_id,
                "content": content,
                "source": source,
                "tags": json.loads(tags),
                "category": category,
                "metadata": json.loads(meta),
                "created_at": iso_from_ms(created),
                "updated_at": iso_from_ms(updated),
                "layer": layer,
                "kind": kind,
                "confidence": confidence,
                "salience": salience,
                "references": json.loads(refs),
                "expires_at": None if expires is None else iso_from_ms(expires),
                "fingerprint": fingerprint,
                "hits": hits,
                **chain_fields(key, valid_from, valid_to, successor),
            }
        if len(rows) < _PAGE:
            return
        after = rows[-1][0]
