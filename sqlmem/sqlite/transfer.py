"""Export and import of a whole memory database as JSON Lines.

The export is a restore format, not a report: it keeps everything the public API can
observe, exactly. Line 1 is a header; then one record per line:

    {"format": "sqlmem-export", "format_version": 1, "schema_version": 1,
     "exported_at": "2025-01-31T09:15:02.123+00:00"}
    {"type": "message", "session_id": "chat:1", "seq": 1, "archived": true,
     "role": "user", "content": "hi", "name": "", "tool_call_id": "", "tool_calls": [],
     "is_error": false, "metadata": {}, "created_at": "2025-01-31T09:14:55.001+00:00"}
    {"type": "summary", "session_id": "chat:1", "summary": "...", "archived_seq": 4}
    {"type": "fact", "id": "...", "content": "...", "source": "", "tags": [],
     "category": "", "metadata": {}, "created_at": "...", "updated_at": "..."}

Messages come first, ordered by session id then seq (so exporting an import gives the
same lines); then a summary record for every session with a summary or archived
messages, carrying the archive boundary with the summary that describes it; then every
fact, oldest row first. Timestamps are ISO-8601 UTC with milliseconds, the precision the
engine stores. Text is UTF-8 and not escaped, except that JSON escapes every control
character, so each record is exactly one line when split on b"\\n" alone.

Import is a merge keyed by identity, so it is idempotent and safe to re-run:

- a message is identified by (session_id, seq): an existing one is left as it is, never
  renumbered or overwritten; the session's counter and archive boundary only move forward
  (max of what is there and what is imported). Seqs are taken as given, so a hand-made
  file must number each session 1, 2, 3 ... without gaps, as exports do (the history
  store counts active messages as last_seq - archived_seq). Seqs and archive boundaries
  go up to `MAX_IMPORTED_SEQ` (2**62), which leaves room for 2**62 appends;
- a summary replaces the target's when the target has none, or when the imported archive
  boundary is at least the target's (the summary belongs to the boundary it describes);
- a fact is identified by its id (a record without one gets the id `LLMExtractor` would
  give its text). Of the stored fact and the file's records of one id, the one with the
  latest `updated_at` wins; on a tie the later record (the file counting as coming after
  what the target holds, so a tie with the target only writes when the values differ
  and a second import writes nothing). An older export never rolls back a newer fact. A
  record without `updated_at` is older than any dated one: it only fills an id nothing
  else gives. The outcome is that of taking the records one by one, whatever the batch
  size (within a batch the winner is picked first, then compared with the stored fact).

Direct SQL is needed because the history store's public API assigns seqs, timestamps and
the archive boundary itself; restoring them exactly is this module's whole job. Every
statement is a constant with bound values, run through the engine's writer. Records are
validated by the pydantic models before anything is written; a bad one stops the import
with its line number. Batches of `BATCH_SIZE` records are committed one transaction at
a time (never holding the write lock for a whole large file): what came before a bad
line stays imported, and running the fixed file again only adds the rest.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import IO, TYPE_CHECKING, Any

from pydantic import ValidationError

from ..config import validation_message
from ..errors import InvalidArgumentError
from ..records import Fact, Message
from ..rules.checks import check_session_id, check_text, encode_metadata, encode_tool_calls
from ..rules.encoding import dt_from_ms, dt_to_ms, now_ms
from ..rules.filters import prepare_fact
from ..rules.identity import fact_id
from ..search.query import segment
from .migrations import read_user_version

if TYPE_CHECKING:
    import apsw

    from .db import MemoryDB

__all__ = [
    "BATCH_SIZE",
    "EXPORT_FORMAT",
    "FORMAT_VERSION",
    "MAX_IMPORTED_SEQ",
    "ExportFormatError",
    "ExportStream",
    "ImportCounts",
    "export_records",
    "import_lines",
    "import_records",
    "import_stream",
    "iso_ms",
    "read_export",
    "write_jsonl",
]

EXPORT_FORMAT = "sqlmem-export"
FORMAT_VERSION = 1
BATCH_SIZE = 1000
#: Rows read per query while exporting; each page is its own short read.
_PAGE = 1000
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

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def iso_ms(value: datetime) -> str:
    """ISO-8601 in UTC with milliseconds, readable by `datetime.fromisoformat` (3.7+)."""
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def _iso_from_ms(ms: int) -> str:
    return iso_ms(dt_from_ms(ms))


# -- export --------------------------------------------------------------------------------

# Sessions in session_id order (its UNIQUE index), so an export of an import is the same
# file whatever order the sessions were created in. A BLOB session_id is a session being
# purged (history_sql's purge notes): gone for every read, so for the export too.
_PAGE_MESSAGES = """
SELECT s.session_id, m.seq, m.seq <= s.archived_seq, m.role, m.content, m.name,
       m.tool_call_id, m.tool_calls, m.is_error, m.metadata, m.created_at
FROM sessions AS s CROSS JOIN messages AS m ON m.session = s.pk
WHERE (s.session_id, m.seq) > (?, ?) AND typeof(s.session_id) = 'text'
ORDER BY s.session_id, m.seq
LIMIT ?
"""
# Sessions with neither a summary nor archived messages say nothing their messages don't.
_PAGE_SESSIONS = """
SELECT session_id, summary, archived_seq FROM sessions
WHERE session_id > ? AND (summary != '' OR archived_seq > 0)
ORDER BY session_id LIMIT ?
"""
_PAGE_FACTS = """
SELECT pk, id, content, source, tags, category, metadata, created_at, updated_at
FROM facts WHERE pk > ? ORDER BY pk LIMIT ?
"""


def export_records(db: MemoryDB, progress: Progress | None = None) -> Iterator[dict[str, Any]]:
    """The header, then every message, session summary and fact of `db`, as dicts.

    Rows are read in pages of 1,000 by key, each page in its own short read, so a large
    export neither holds a reader open while the caller writes nor loads the file into
    memory. Writes made while an export runs may or may not be included.
    `progress(n)` is called every 10,000 records.
    """
    with db._engine.read() as conn:
        version = read_user_version(conn)
    yield {
        "format": EXPORT_FORMAT,
        "format_version": FORMAT_VERSION,
        "schema_version": version,
        "exported_at": iso_ms(datetime.now(timezone.utc)),
    }
    records = _chain(_messages(db), _summaries(db), _facts(db))
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
        with db._engine.read() as conn:
            rows: list[Any] = conn.execute(_PAGE_MESSAGES, (*after, _PAGE)).fetchall()
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
                "created_at": _iso_from_ms(row[10]),
            }
        if len(rows) < _PAGE:
            return
        after = (rows[-1][0], rows[-1][1])


def _summaries(db: MemoryDB) -> Iterator[dict[str, Any]]:
    after = ""
    while True:
        with db._engine.read() as conn:
            rows: list[Any] = conn.execute(_PAGE_SESSIONS, (after, _PAGE)).fetchall()
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


def _facts(db: MemoryDB) -> Iterator[dict[str, Any]]:
    after = 0
    while True:
        with db._engine.read() as conn:
            rows: list[Any] = conn.execute(_PAGE_FACTS, (after, _PAGE)).fetchall()
        for row in rows:
            yield {
                "type": "fact",
                "id": row[1],
                "content": row[2],
                "source": row[3],
                "tags": json.loads(row[4]),
                "category": row[5],
                "metadata": json.loads(row[6]),
                "created_at": _iso_from_ms(row[7]),
                "updated_at": _iso_from_ms(row[8]),
            }
        if len(rows) < _PAGE:
            return
        after = rows[-1][0]


def write_jsonl(records: Iterable[Mapping[str, Any]], out: IO[bytes]) -> int:
    """Write records as UTF-8 JSON Lines; returns how many were written.

    Non-ASCII text is kept readable; json escapes every control character (NUL, CR, LF),
    so a record is always exactly one line. Readers must split on b"\\n" only (U+2028 and
    U+0085 may appear raw inside strings): `import_lines` does.
    """
    count = 0
    for record in records:
        line = json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))
        out.write(line.encode("utf-8") + b"\n")
        count += 1
    return count


# -- import --------------------------------------------------------------------------------

_UPSERT_SESSION = """
INSERT INTO sessions(session_id, unindexed, summary, last_seq, archived_seq, created_at,
                     updated_at)
VALUES (:session_id, :unindexed, :summary, :last_seq, :archived_seq, :now, :now)
ON CONFLICT(session_id) DO UPDATE SET
    unindexed = max(sessions.unindexed, excluded.unindexed),
    summary = CASE
        WHEN :has_summary AND (sessions.summary = ''
                               OR excluded.archived_seq >= sessions.archived_seq)
        THEN excluded.summary ELSE sessions.summary END,
    last_seq = max(sessions.last_seq, excluded.last_seq),
    archived_seq = max(sessions.archived_seq, excluded.archived_seq),
    updated_at = CASE
        WHEN sessions.last_seq < excluded.last_seq
          OR sessions.archived_seq < excluded.archived_seq
          OR (:has_summary AND sessions.summary IS NOT excluded.summary
              AND (sessions.summary = '' OR excluded.archived_seq >= sessions.archived_seq))
        THEN excluded.updated_at ELSE sessions.updated_at END
RETURNING pk, summary
"""
_INSERT_MESSAGE = """
INSERT INTO messages(session, seq, role, content, name, tool_call_id, tool_calls, is_error,
                     metadata, created_at, searchable, search_text)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(session, seq) DO NOTHING
"""
_STORED_FACT = (
    "SELECT content, source, category, tags, metadata, created_at, updated_at"
    " FROM facts WHERE id = ?"
)
_SESSION_SUMMARY = "SELECT summary FROM sessions WHERE session_id = ?"


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


def import_lines(
    db: MemoryDB, lines: Iterable[bytes | str], progress: Progress | None = None
) -> ImportCounts:
    """Import an export file given as its lines; see `read_export`."""
    return import_stream(db, read_export(lines), progress)


def import_records(
    db: MemoryDB, records: Iterable[Mapping[str, Any]], progress: Progress | None = None
) -> ImportCounts:
    """Import records as `export_records` yields them, header first.

    Errors name the 1-based position of the bad record.
    """
    return import_stream(db, _start(enumerate(records, start=1), "record"), progress)


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


def import_stream(
    db: MemoryDB, stream: ExportStream, progress: Progress | None = None
) -> ImportCounts:
    """Write the stream's records into `db`, `BATCH_SIZE` records per transaction."""
    counts = ImportCounts()
    undated: set[str] = set()  # fact ids this import stored from records without updated_at
    batch: list[tuple[int, Any]] = []
    done = 0
    for item in stream.records:
        batch.append(item)
        if len(batch) >= BATCH_SIZE:
            _write_batch(db, _validate_batch(batch, stream.unit), counts, undated)
            done += len(batch)
            batch.clear()
            if progress is not None and done % 10_000 == 0:
                progress(done)
    if batch:
        _write_batch(db, _validate_batch(batch, stream.unit), counts, undated)
    return counts


def _check_header(number: int, header: Any, unit: str) -> None:
    where = f"{unit} {number}"
    if not isinstance(header, Mapping) or header.get("format") != EXPORT_FORMAT:
        raise ExportFormatError(
            f"{where}: not a sqlmem export (expected a header with format {EXPORT_FORMAT!r})"
        )
    version = header.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ExportFormatError(f"{where}: format_version must be an integer >= 1")
    if version > FORMAT_VERSION:
        raise ExportFormatError(
            f"{where}: export format_version {version} is newer than this sqlmem reads "
            f"({FORMAT_VERSION}); upgrade sqlmem to import it"
        )


@dataclass(frozen=True)
class _MessageRow:
    session_id: str
    seq: int
    archived: bool
    message: Message


@dataclass(frozen=True)
class _SummaryRow:
    session_id: str
    summary: str
    archived_seq: int


_Row = _MessageRow | _SummaryRow | Fact


def _validate_batch(batch: list[tuple[int, Any]], unit: str) -> list[_Row]:
    """Every record of the batch validated before any of it is written."""
    rows: list[_Row] = []
    for number, record in batch:
        try:
            rows.append(_validate(record))
        except (ValueError, TypeError) as exc:
            cause = exc.__cause__  # a record refusing a field keeps pydantic's error there
            if isinstance(cause, ValidationError):
                exc = ValueError(validation_message(cause, "record"))
            raise ExportFormatError(f"{unit} {number}: {exc}") from None
    return rows


def _validate(record: Any) -> _Row:
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
        return _MessageRow(session_id, seq, archived, message)
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
        return _SummaryRow(session_id, summary, boundary)
    if kind == "fact":
        if not fields.get("id"):  # the id extraction would give this text: idempotent
            fields["id"] = fact_id(str(fields.get("content", "")))
        fact = Fact.model_validate(fields)
        prepare_fact(fact)  # the store's own checks (id length ...), to name the line now
        return fact
    raise ValueError(f"unknown record type {kind!r} (expected message, summary or fact)")


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


def _write_batch(db: MemoryDB, rows: list[_Row], counts: ImportCounts, undated: set[str]) -> None:
    """One transaction: sessions and messages by direct SQL, facts through the store.

    Facts: the batch's winner per id (`_beats`), then written if it beats what is stored
    (`_beats_stored`), so the outcome is the same as taking the file's records one by one,
    whatever the batch size (issue 23 item 16: the older text used to win within a batch).
    """
    searchable = 1 if db.config.history_search else 0
    now = now_ms()
    winners: dict[str, Fact] = {}  # keeps the first position of an id (its pk order)
    seen = 0
    with db._engine.write() as conn:
        for row in rows:
            if isinstance(row, _MessageRow):
                _write_message(conn, row, searchable, now, counts)
            elif isinstance(row, _SummaryRow):
                _write_summary(conn, row, now, counts)
            else:
                seen += 1
                best = winners.get(row.id)
                if best is None or _beats(row, best):
                    winners[row.id] = row
        facts = [f for f in winners.values() if _beats_stored(conn, f, undated)]
        if facts:
            db.facts.index_many(facts)  # nested: a savepoint of this transaction
        for f in facts:
            if f.updated_at is None:
                undated.add(f.id)
            else:
                undated.discard(f.id)
        counts.facts += len(facts)
        counts.facts_skipped += seen - len(facts)


def _beats(later: Fact, earlier: Fact) -> bool:
    """Of two records of one id, `later` coming after `earlier` in the file: the greater
    updated_at wins, the later record on a tie; a record without one is older than any."""
    if later.updated_at is None:
        return earlier.updated_at is None
    if earlier.updated_at is None:
        return True
    return dt_to_ms(later.updated_at) >= dt_to_ms(earlier.updated_at)


def _write_message(
    conn: apsw.Connection, row: _MessageRow, searchable: int, now: int, counts: ImportCounts
) -> None:
    session = conn.execute(
        _UPSERT_SESSION,
        {
            "session_id": row.session_id,
            # Messages imported with history search off wait for the next open with it
            # on, like appended ones (see history.index_unsearchable_messages).
            "unindexed": 1 - searchable,
            "summary": "",
            "has_summary": 0,
            "last_seq": row.seq,
            "archived_seq": row.seq if row.archived else 0,
            "now": now,
        },
    ).fetchall()[0][0]
    message = row.message
    created = now if message.created_at is None else dt_to_ms(message.created_at)
    conn.execute(
        _INSERT_MESSAGE,
        (
            session,
            row.seq,
            message.role,
            message.content,
            message.name,
            message.tool_call_id,
            encode_tool_calls(message.tool_calls),
            int(message.is_error),
            encode_metadata(message.metadata),
            created,
            searchable,
            segment(message.content),
        ),
    )
    if conn.changes():
        counts.messages += 1
    else:
        counts.messages_skipped += 1


def _write_summary(conn: apsw.Connection, row: _SummaryRow, now: int, counts: ImportCounts) -> None:
    before = conn.execute(_SESSION_SUMMARY, (row.session_id,)).fetchall()
    after = conn.execute(
        _UPSERT_SESSION,
        {
            "session_id": row.session_id,
            "unindexed": 0,
            "summary": row.summary,
            "has_summary": 1 if row.summary else 0,
            "last_seq": row.archived_seq,
            "archived_seq": row.archived_seq,
            "now": now,
        },
    ).fetchall()[0][1]
    if row.summary and (not before or before[0][0] != after):
        counts.summaries += 1


def _beats_stored(conn: apsw.Connection, fact: Fact, undated: set[str]) -> bool:
    """Whether the record replaces the stored fact of its id, by `_beats`' rule, the
    stored fact counting as an earlier record.

    A stored fact that came from an undated record of this import (`undated`; such a
    fact is stored with the time it was written) loses to any later record. A stored
    fact from anywhere else is never replaced by an undated record; on equal updated_at
    it is replaced only when the values differ, so importing a file twice writes nothing.
    """
    stored: list[Any] = conn.execute(_STORED_FACT, (fact.id,)).fetchall()
    if not stored or fact.id in undated:
        return True
    if fact.updated_at is None:
        return False
    updated, stored_updated = dt_to_ms(fact.updated_at), int(stored[0][-1])
    if updated != stored_updated:
        return updated > stored_updated
    row = prepare_fact(fact)
    mine = (row.content, row.source, row.category, row.tags, row.metadata)
    return tuple(stored[0][:5]) != mine or (
        row.created_ms is not None and row.created_ms != stored[0][5]
    )
