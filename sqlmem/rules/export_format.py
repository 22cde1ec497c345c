"""The export format of a memory database (JSON Lines), and what a valid record is.

Shared by every backend's export and import (sqlite/export.py, sqlite/importer.py): the
file layout, the header check, record validation and the rule that picks between two
records of one fact. Nothing here touches a database.

The export is a restore format, not a report: it keeps everything the public API can
observe, exactly. Line 1 is a header; then one record per line:

    {"format": "sqlmem-export", "format_version": 1, "schema_version": 1,
     "exported_at": "2025-01-31T09:15:02.123+00:00"}
    {"type": "message", "session_id": "chat:1", "seq": 1, "archived": true,
     "role": "user", "content": "hi", "name": "", "tool_call_id": "", "tool_calls": [],
     "is_error": false, "metadata": {}, "created_at": "2025-01-31T09:14:55.001+00:00"}
    {"type": "summary", "session_id": "chat:1", "summary": "...", "archived_seq": 4}
    {"type": "fact", "id": "...", "content": "...", "source": "", "tags": [],
     "category": "", "metadata": {}, "created_at": "...", "updated_at": "...",
     "layer": "semantic", "kind": "", "confidence": 1.0, "salience": 0.5,
     "references": [], "expires_at": null, "fingerprint": "...", "hits": 1}
    {"type": "document", "path": "MEMORY.md", "content": "...", "enabled": true,
     "sort_order": 3, "revision": 4, "created_at": "...", "updated_at": "..."}
    {"type": "revision", "path": "MEMORY.md", "revision": 3, "content": "...",
     "updated_at": "..."}
    {"type": "vector", "id": "<fact id>", "model": "...", "dim": 256,
     "data": "<base64 of float32 little-endian>"}

Format version 2 (0.2) adds, after the documents, the frameworks' tables: kv rows, then
LangGraph checkpoints and their pending writes (rules/export_blobs.py has their fields).

Format version 3 (0.3) adds two things, each only when the database holds some: message
vectors after the summaries (rules/export_vectors.py), and, on a fact record whose fact has
a key, a valid time or a successor, `key`, `valid_from`, `valid_to` and `superseded_by`. An
import places keyed facts in their chains by `valid_from` (`valid_to` is derived again) and
relinks facts without a key that `superseded_by` names. An export holding neither is
written as version 2, which a 0.2 reader reads; a 0.2 reader refuses a version 3 file at
its header, before writing anything.

A vector record (0.2, SPEC 17) follows the facts: the embedding of that fact's content; an
import stores it when the fact exists (vectors of facts the file does not hold are skipped).
A fact's memory-item keys (0.2, SPEC 12) are optional: a 0.1 export without them imports
with their defaults. `fingerprint` is written for readers and ignored on import (the store
computes it from the content); `hits` is restored. Expired facts are not exported.

Messages come first, ordered by session id then seq (so exporting an import gives the
same lines); then a summary record for every session with a summary or archived
messages, carrying the archive boundary with the summary that describes it; then every
fact, oldest row first; then every workspace document, then their kept previous contents
(after the documents they belong to). Timestamps are ISO-8601 UTC with milliseconds, the
precision the engine stores. Text is UTF-8 and not escaped, except that JSON escapes every control
character, so each record is exactly one line when split on b"\\n" alone.

Records are validated by the pydantic models before anything is written; a bad one stops
the import with its line number (or, for records given as objects, its position).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import IO, Any

from pydantic import ValidationError

from ..config import validation_message
from ..errors import InvalidArgumentError
from ..records import Fact, Message
from .checks import check_session_id, check_text
from .documents import check_bool, check_content, check_doc_path, check_sort_order
from .encoding import dt_from_ms, dt_to_ms
from .export_blobs import (
    BLOB_RECORD_TYPES,
    CheckpointRecordRow,
    CheckpointWriteRow,
    KVRecordRow,
    stamp_ms,
    validate_blob_record,
)
from .export_vectors import (
    MESSAGE_VECTORS_FORMAT_VERSION,
    MessageVectorRow,
    VectorRow,
    message_vector_row,
    vector_row,
)
from .filters import prepare_fact
from .identity import fact_id

__all__ = [
    "CHAINS_FORMAT_VERSION",
    "EXPORT_FORMAT",
    "FORMAT_VERSION",
    "MAX_IMPORTED_SEQ",
    "READABLE_FORMAT_VERSION",
    "BlobRow",
    "DocumentRow",
    "ExportFormatError",
    "ExportStream",
    "ImportCounts",
    "MessageRow",
    "MessageVectorRow",
    "Progress",
    "RevisionRow",
    "Row",
    "SummaryRow",
    "VectorRow",
    "chain_fields",
    "iso_from_ms",
    "iso_ms",
    "newer_record",
    "read_export",
    "read_records",
    "validate_batch",
    "write_jsonl",
]

EXPORT_FORMAT = "sqlmem-export"
#: 2 (0.2): kv, checkpoint and checkpoint_write records (rules/export_blobs.py), which a
#: version-1 reader would refuse midway, after committing the records before them; it
#: now refuses the header instead. Version-1 files import as before.
FORMAT_VERSION = 2
#: What an export holding facts that change (keys, valid times, supersession) or message
#: vectors writes, and the newest version this reader reads; one without them stays
#: FORMAT_VERSION, which readers of 0.2 read as before.
CHAINS_FORMAT_VERSION = MESSAGE_VECTORS_FORMAT_VERSION
READABLE_FORMAT_VERSION = MESSAGE_VECTORS_FORMAT_VERSION
#: The largest seq or archive boundary an import accepts: half of SQLite's integer range,
#: so that 2**62 appends always fit after any import. Up to 0.1 any 64-bit value passed,
#: and an imported 2**63-1 made the next append commit a float seq (issue 23 item 7).
MAX_IMPORTED_SEQ = 2**62

Progress = Callable[[int], None]


class ExportFormatError(InvalidArgumentError):
    """An import file that is not a sqlmem export, is newer, or holds a bad record."""


@dataclass
class ImportCounts:
    """What one import changed; `*_skipped` were already there (or newer there)."""

    messages: int = 0
    messages_skipped: int = 0
    summaries: int = 0
    facts: int = 0
    facts_skipped: int = 0
    documents: int = 0
    documents_skipped: int = 0
    revisions: int = 0
    revisions_skipped: int = 0
    vectors: int = 0
    vectors_skipped: int = 0
    message_vectors: int = 0
    message_vectors_skipped: int = 0
    kv: int = 0
    kv_skipped: int = 0
    checkpoints: int = 0
    checkpoints_skipped: int = 0
    checkpoint_writes: int = 0
    checkpoint_writes_skipped: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def iso_ms(value: datetime) -> str:
    """ISO-8601 in UTC with milliseconds, readable by `datetime.fromisoformat` (3.7+)."""
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def iso_from_ms(ms: int) -> str:
    """A stored timestamp (ms since the epoch) as the export writes it."""
    return iso_ms(dt_from_ms(ms))


def write_jsonl(records: Iterable[Mapping[str, Any]], out: IO[bytes]) -> int:
    """Write records as UTF-8 JSON Lines; returns how many were written.

    Non-ASCII text is kept readable; json escapes every control character (NUL, CR, LF),
    so a record is always exactly one line. Readers must split on b"\\n" only (U+2028 and
    U+0085 may appear raw inside strings): `read_export` does.
    """
    count = 0
    for record in records:
        line = json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))
        out.write(line.encode("utf-8") + b"\n")
        count += 1
    return count


# -- reading -------------------------------------------------------------------------------


@dataclass
class ExportStream:
    """An export being read: its checked header, then the numbered records after it.

    Reading the header first lets a caller refuse a bad file before it creates or opens
    the target database.
    """

    header: Mapping[str, Any]
    records: Iterator[tuple[int, Any]]
    unit: str  # "line" or "record": how error messages count


def read_export(lines: Iterable[bytes | str]) -> ExportStream:
    """Start reading an export file given as its lines (a file opened in binary mode
    splits on b"\\n" only, as it must). Blank lines are ignored; errors name the line."""
    return _start(_parse_lines(lines), "line")


def read_records(records: Iterable[Any]) -> ExportStream:
    """Start reading an export given as records (dicts, as an export yields them), header
    first; errors name the 1-based position of the bad record."""
    return _start(enumerate(records, start=1), "record")


def _start(numbered: Iterable[tuple[int, Any]], unit: str) -> ExportStream:
    records = iter(numbered)
    first = next(records, None)
    if first is None:
        raise ExportFormatError("empty import: expected a sqlmem-export header first")
    _check_header(*first, unit)
    return ExportStream(first[1], records, unit)


def _parse_lines(lines: Iterable[bytes | str]) -> Iterator[tuple[int, Any]]:
    for number, raw in enumerate(lines, start=1):
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            if number == 1:
                text = text.removeprefix("\ufeff")  # a BOM some Windows editors add
        except UnicodeDecodeError as exc:
            raise ExportFormatError(f"line {number}: not UTF-8 text ({exc.reason})") from None
        if not text.strip():
            continue
        try:
            yield number, json.loads(text)
        except json.JSONDecodeError as exc:
            raise ExportFormatError(f"line {number}: not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise ExportFormatError(f"line {number}: JSON nested too deeply") from None


def _check_header(number: int, header: Any, unit: str) -> None:
    where = f"{unit} {number}"
    if not isinstance(header, Mapping) or header.get("format") != EXPORT_FORMAT:
        raise ExportFormatError(
            f"{where}: not a sqlmem export (expected a header with format {EXPORT_FORMAT!r})"
        )
    version = header.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ExportFormatError(f"{where}: format_version must be an integer >= 1")
    if version > READABLE_FORMAT_VERSION:
        raise ExportFormatError(
            f"{where}: export format_version {version} is newer than this sqlmem reads "
            f"({READABLE_FORMAT_VERSION}); upgrade sqlmem to import it"
        )


# -- validating ----------------------------------------------------------------------------


@dataclass(frozen=True)
class MessageRow:
    session_id: str
    seq: int
    archived: bool
    message: Message


@dataclass(frozen=True)
class SummaryRow:
    session_id: str
    summary: str
    archived_seq: int


@dataclass(frozen=True)
class DocumentRow:
    """A workspace document as exported: its current content, flags and revision."""

    path: str
    content: str
    size: int
    enabled: bool
    sort_order: int
    revision: int
    created_ms: int
    updated_ms: int


@dataclass(frozen=True)
class RevisionRow:
    """A kept previous content of the document at `path`."""

    path: str
    revision: int
    content: str
    size: int
    updated_ms: int


#: A kv, checkpoint or checkpoint_write record (format_version 2, rules/export_blobs.py).
BlobRow = KVRecordRow | CheckpointRecordRow | CheckpointWriteRow

#: A validated record: a message with its place, a session summary, a fact, a document,
#: one of its kept revisions, a fact's or a message's vector.
Row = (
    MessageRow | SummaryRow | Fact | DocumentRow | RevisionRow | VectorRow | MessageVectorRow
    | BlobRow
)  # fmt: skip


def validate_batch(batch: list[tuple[int, Any]], unit: str) -> list[Row]:
    """Every record of the batch validated before any of it is written."""
    rows: list[Row] = []
    for number, record in batch:
        try:
            rows.append(_validate(record))
        except (ValueError, TypeError) as exc:
            cause = exc.__cause__  # a record refusing a field keeps pydantic's error there
            if isinstance(cause, ValidationError):
                exc = ValueError(validation_message(cause, "record"))
            raise ExportFormatError(f"{unit} {number}: {exc}") from None
    return rows


def _validate(record: Any) -> Row:
    if not isinstance(record, Mapping):
        raise ValueError("a record must be a JSON object")
    fields = dict(record)
    kind = fields.pop("type", None)
    if kind == "message":
        archived = fields.pop("archived", False)
        if not isinstance(archived, bool):
            raise ValueError("archived must be true or false")
        message = Message.model_validate(fields)
        session_id = check_session_id(message.session_id)
        seq = _counter(message.seq, "seq", 1)
        return MessageRow(session_id, seq, archived, message)
    if kind == "summary":
        session_id = check_session_id(fields.get("session_id"))
        summary, boundary = fields.get("summary", ""), fields.get("archived_seq", 0)
        if not isinstance(summary, str):
            raise ValueError("summary must be a string")
        boundary = _counter(boundary, "archived_seq", 0)
        extra = set(fields) - {"session_id", "summary", "archived_seq"}
        if extra:
            raise ValueError(f"unknown field(s) in a summary record: {', '.join(sorted(extra))}")
        check_text(summary, "summary")
        return SummaryRow(session_id, summary, boundary)
    if kind == "fact":
        if not fields.get("id"):  # the id extraction would give this text: idempotent
            fields["id"] = fact_id(str(fields.get("content", "")))
        fact = Fact.model_validate(fields)
        prepare_fact(fact, keep_hits=True)  # the store's checks (id length ...), named now
        return fact
    if kind == "document":
        return _document(fields)
    if kind == "revision":
        return _revision(fields)
    if kind == "vector":
        return vector_row(fields)
    if kind == "message_vector":
        return message_vector_row(fields, MAX_IMPORTED_SEQ)
    if kind in BLOB_RECORD_TYPES:
        row: BlobRow = validate_blob_record(kind, fields)
        return row
    raise ValueError(
        f"unknown record type {kind!r} (expected message, summary, fact, document, "
        "revision, vector, message_vector, kv, checkpoint or checkpoint_write)"
    )


def _document(fields: dict[str, Any]) -> DocumentRow:
    _only(fields, "document", {"path", "content", "enabled", "sort_order", "revision"}, 2)
    path = check_doc_path(fields.get("path"))
    content = fields.get("content")
    size = check_content(content)
    return DocumentRow(
        path,
        content,  # type: ignore[arg-type]  # checked by check_content
        size,
        check_bool(fields.get("enabled"), "enabled"),
        check_sort_order(fields.get("sort_order")),
        _counter(fields.get("revision"), "revision", 1),
        stamp_ms(fields.get("created_at"), "created_at"),
        stamp_ms(fields.get("updated_at"), "updated_at"),
    )


def _revision(fields: dict[str, Any]) -> RevisionRow:
    _only(fields, "revision", {"path", "revision", "content"}, 1)
    path = check_doc_path(fields.get("path"))
    content = fields.get("content")
    size = check_content(content)
    revision = _counter(fields.get("revision"), "revision", 1)
    stamp = stamp_ms(fields.get("updated_at"), "updated_at")
    return RevisionRow(path, revision, content, size, stamp)  # type: ignore[arg-type]


def _only(fields: Mapping[str, Any], kind: str, names: set[str], stamps: int) -> None:
    allowed = names | ({"created_at", "updated_at"} if stamps == 2 else {"updated_at"})
    extra = set(fields) - allowed
    if extra:
        raise ValueError(f"unknown field(s) in a {kind} record: {', '.join(sorted(extra))}")


def _counter(value: Any, name: str, minimum: int) -> int:
    """A seq or boundary: an integer up to MAX_IMPORTED_SEQ, not a bool."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not minimum <= value <= MAX_IMPORTED_SEQ
    ):
        raise ValueError(
            f"{name} must be an integer from {minimum} to 2**62 (room for later appends)"
        )
    return value


def chain_fields(
    key: str, valid_from: int | None, valid_to: int | None, superseded_by: str | None
) -> dict[str, Any]:
    """A fact record's facts-that-change fields (format 3); {} for a fact in no chain."""
    if not key and valid_from is None and superseded_by is None:
        return {}
    return {
        "key": key,
        "valid_from": None if valid_from is None else iso_from_ms(valid_from),
        "valid_to": None if valid_to is None else iso_from_ms(valid_to),
        "superseded_by": superseded_by,
    }


def newer_record(later: Fact, earlier: Fact) -> bool:
    """Of two records of one id, `later` coming after `earlier` in the file: the greater
    updated_at wins, the later record on a tie; a record without one is older than any."""
    if later.updated_at is None:
        return earlier.updated_at is None
    if earlier.updated_at is None:
        return True
    return dt_to_ms(later.updated_at) >= dt_to_ms(earlier.updated_at)
