"""Export of a SQLite memory database: the records of the format in rules/export_format.py,
through the export front (`sqlmem.stores.transfer.export_from`, which writes the header and
puts the records in order) over `SQLiteExportPort`.

Rows are read in pages by key (statements in history_transfer_sql.py and facts_sql.py),
each page in its own short read through the engine's reader pool.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ...rules.encoding import now_ms
from ...rules.export_format import Progress, chain_fields, iso_from_ms
from ...rules.export_records import PAGE, message_record, paged, summary_record
from ...stores.transfer import export_from
from ..core.migrations import read_user_version
from ..stores.facts_sql import EXPORT_FACTS_PAGE
from .docs_transfer import export_documents
from .history_transfer_sql import EXPORT_MESSAGES_PAGE, EXPORT_SESSIONS_PAGE
from .kv_transfer import export_checkpoints, export_kv
from .message_vectors_transfer import export_message_vectors, has_message_vectors
from .vectors_transfer import export_vectors

if TYPE_CHECKING:
    from ..db import MemoryDB

__all__ = ["SQLiteExportPort", "export_records"]

#: Rows read per query while exporting; each page is its own short read.
_PAGE = PAGE


def export_records(db: MemoryDB, progress: Progress | None = None) -> Iterator[dict[str, Any]]:
    """The header, then every message, session summary, message vector, fact, fact vector,
    document, kept document revision, kv row, checkpoint and pending write of `db`, as
    dicts.

    Rows are read in pages of 1,000 by key, each page in its own short read, so a large
    export neither holds a reader open while the caller writes nor loads the file into
    memory. Writes made while an export runs may or may not be included.
    `progress(n)` is called every 10,000 records.
    """
    return export_from(SQLiteExportPort(db), progress)


class SQLiteExportPort:
    """A SQLite memory database as an export source (`ExportPort`)."""

    def __init__(self, db: MemoryDB) -> None:
        self._db = db

    def header(self) -> tuple[int, bool]:
        with self._db.engine.read() as conn:
            return read_user_version(conn), bool(conn.execute(_ANY_CHANGING).fetchall())

    def has_message_vectors(self) -> bool:
        return has_message_vectors(self._db)

    def parts(self, message_vectors: bool) -> Sequence[Iterator[dict[str, Any]]]:
        db = self._db
        return (
            _messages(db), _summaries(db),
            export_message_vectors(db) if message_vectors else iter(()),
            _facts(db), export_vectors(db), export_documents(db), export_kv(db),
            export_checkpoints(db),
        )  # fmt: skip


def _messages(db: MemoryDB) -> Iterator[dict[str, Any]]:
    def read(after: tuple[str, int], page: int) -> list[Any]:
        with db.engine.read() as conn:
            return conn.execute(EXPORT_MESSAGES_PAGE, (*after, page)).fetchall()

    for row in paged(read, ("", 0), _session_and_seq, _PAGE):
        yield message_record(row)


def _session_and_seq(row: Sequence[Any]) -> tuple[str, int]:
    return (row[0], row[1])


def _summaries(db: MemoryDB) -> Iterator[dict[str, Any]]:
    def read(after: str, page: int) -> list[Any]:
        with db.engine.read() as conn:
            return conn.execute(EXPORT_SESSIONS_PAGE, (after, page)).fetchall()

    for session_id, summary, archived_seq in paged(read, "", _first, _PAGE):
        yield summary_record(session_id, summary, archived_seq)


def _first(row: Sequence[Any]) -> Any:
    return row[0]


#: Whether any fact has a key, a valid time or a link (then the export is format 3):
#: probes of the partial indexes that hold only such facts.
_ANY_CHANGING = (
    "SELECT 1 WHERE EXISTS (SELECT 1 FROM facts WHERE chain IS NOT NULL)"
    " OR EXISTS (SELECT 1 FROM facts WHERE valid_from IS NOT NULL)"
)


def _facts(db: MemoryDB) -> Iterator[dict[str, Any]]:
    """Live facts (an expired one is gone for every read, export included)."""

    def read(after: int, page: int) -> list[Any]:
        with db.engine.read() as conn:
            params = {"after": after, "limit": page, "now": now_ms()}
            return conn.execute(EXPORT_FACTS_PAGE, params).fetchall()

    for row in paged(read, 0, _first, _PAGE):
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
