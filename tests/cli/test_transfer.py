"""Export and import (sqlite/export.py, importer.py): a database survives the round trip exactly,
import is idempotent and a merge, and bad or newer files are refused with their line."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from operator import attrgetter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem import Fact, Message, ToolCall
from sqlmem.rules.export_format import ExportFormatError, ImportCounts, write_jsonl
from sqlmem.sqlite.core.migrations import latest_version
from sqlmem.sqlite.transfer.export import export_records
from sqlmem.sqlite.transfer.importer import import_lines, import_records

# -- strategies -------------------------------------------------------------------------------

UTC = timezone.utc
texts = st.text(max_size=40)  # any plane, NUL and line separators included; no surrogates
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
metadata = st.dictionaries(texts, json_values, max_size=3)
timestamps = st.none() | st.datetimes(
    min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)
tool_calls = st.lists(st.builds(ToolCall, id=texts, name=texts, arguments=texts), max_size=2)
messages = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant", "tool"]),
    content=texts | st.sampled_from(["用户喜欢周日早上跑步", "what's my dog's name?"]),
    name=texts,
    tool_call_id=texts,
    tool_calls=tool_calls,
    is_error=st.booleans(),
    metadata=metadata,
    created_at=timestamps,
)
session_ids = st.text(min_size=1, max_size=12)
categories = st.lists(st.from_regex(r"[A-Za-z0-9_-]{1,6}", fullmatch=True), max_size=3).map(
    "/".join
)
facts = st.builds(
    Fact,
    id=st.text(min_size=1, max_size=16),
    content=st.text(min_size=1, max_size=40).filter(str.strip),
    source=texts,
    tags=st.lists(texts, max_size=3),
    category=categories,
    metadata=metadata,
    created_at=timestamps,
    updated_at=timestamps,
)


@st.composite
def sessions(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "messages": draw(st.lists(messages, max_size=6)),
        "keep_last": draw(st.none() | st.integers(0, 6)),
        "summary": draw(st.none() | texts),
    }


memories = st.fixed_dictionaries(
    {
        "sessions": st.dictionaries(session_ids, sessions(), max_size=3),
        "facts": st.lists(facts, max_size=5, unique_by=attrgetter("id")),
    }
)


# -- helpers ----------------------------------------------------------------------------------


def fill(db: sqlmem.MemoryDB, memory: dict[str, Any]) -> None:
    """Write through the public API only: seqs, boundaries and timestamps as it makes them."""
    for session_id, spec in memory["sessions"].items():
        if spec["messages"]:
            db.history.append_many(session_id, spec["messages"])
        if spec["keep_last"] is not None:
            db.history.compact(session_id, spec["keep_last"], spec["summary"])
        elif spec["summary"] is not None:
            db.history.set_summary(session_id, spec["summary"])
    if memory["facts"]:
        db.facts.index_many(memory["facts"])


def snapshot(db: sqlmem.MemoryDB) -> dict[str, Any]:
    """Everything the public API shows of a database."""
    return {
        "sessions": {
            s: (
                db.history.get_all(s, include_archived=True),
                db.history.count(s),
                db.history.get_summary(s),
            )
            for s in db.history.sessions()
        },
        "facts": sorted(
            (f.model_dump() for f in db.facts.list(limit=10_000)), key=lambda f: f["id"]
        ),
    }


def body(db: sqlmem.MemoryDB) -> list[dict[str, Any]]:
    """The export without its header (whose `exported_at` differs between runs)."""
    return list(export_records(db))[1:]


def as_lines(records: list[dict[str, Any]]) -> list[bytes]:
    """The records as `sqlmem export` writes them, split as `sqlmem import` reads them."""

    class Sink:
        def __init__(self) -> None:
            self.data = b""

        def write(self, chunk: bytes) -> None:
            self.data += chunk

    sink = Sink()
    write_jsonl(records, sink)  # type: ignore[arg-type]
    return sink.data.splitlines(keepends=True)  # bytes.splitlines splits on \n, \r only


@pytest.fixture
def open_fresh(tmp_path: Path) -> Iterator[Callable[[str], sqlmem.MemoryDB]]:
    with ExitStack() as stack:

        def _open(name: str) -> sqlmem.MemoryDB:
            return stack.enter_context(sqlmem.open(tmp_path / name))

        yield _open


# -- the round trip ---------------------------------------------------------------------------


@settings(max_examples=40)
@given(memory=memories)
def test_export_then_import_reproduces_every_record(memory: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        with sqlmem.open(Path(folder) / "a.db") as source:
            fill(source, memory)
            exported = list(export_records(source))
            expected = snapshot(source)
            expected_body = exported[1:]
        lines = as_lines(exported)
        assert all(line.endswith(b"\n") and line.count(b"\n") == 1 for line in lines)

        with sqlmem.open(Path(folder) / "b.db") as target:
            counts = import_lines(target, lines)
            assert snapshot(target) == expected
            assert body(target) == expected_body  # seqs, archived flags, ids, timestamps
            assert counts.messages == sum(len(s["messages"]) for s in memory["sessions"].values())
            assert counts.facts == len(memory["facts"])

            again = import_lines(target, lines)  # idempotent
            assert again.messages == again.facts == again.summaries == 0
            assert again.messages_skipped == counts.messages
            assert body(target) == expected_body


def test_export_format(open_fresh: Callable[[str], sqlmem.MemoryDB]) -> None:
    db = open_fresh("a.db")
    when = datetime(2025, 1, 31, 9, 14, 55, 1000, tzinfo=UTC)
    db.history.append_many(
        "chat:1",
        [
            Message(role="user", content="weather?", created_at=when),
            Message(
                role="assistant",
                tool_calls=[ToolCall(id="c1", name="get_weather", arguments="{}")],
                created_at=when,
            ),
            Message(role="tool", tool_call_id="c1", content="sunny", created_at=when),
            Message(role="assistant", content="Sunny.", created_at=when),
        ],
    )
    db.history.compact("chat:1", keep_last=1, summary="asked about the weather")
    db.facts.index(Fact(id="f1", content="likes sun", tags=["t"], created_at=when))
    header, *records = export_records(db)

    assert header["format"] == "sqlmem-export"
    assert header["format_version"] == 2
    assert header["schema_version"] == latest_version()
    assert datetime.fromisoformat(header["exported_at"]).tzinfo is not None
    assert [(r["type"], r.get("seq"), r.get("archived")) for r in records] == [
        ("message", 1, True),
        ("message", 2, True),
        ("message", 3, True),
        ("message", 4, False),
        ("summary", None, None),
        ("fact", None, None),
    ]
    assert records[1] == {
        "type": "message",
        "session_id": "chat:1",
        "seq": 2,
        "archived": True,
        "role": "assistant",
        "content": "",
        "name": "",
        "tool_call_id": "",
        "tool_calls": [{"id": "c1", "name": "get_weather", "arguments": "{}"}],
        "is_error": False,
        "metadata": {},
        "created_at": "2025-01-31T09:14:55.001+00:00",
    }
    assert records[4] == {
        "type": "summary",
        "session_id": "chat:1",
        "summary": "asked about the weather",
        "archived_seq": 3,
    }
    fact = records[5]
    assert fact["id"] == "f1" and fact["tags"] == ["t"]
    assert fact["created_at"] == "2025-01-31T09:14:55.001+00:00"
    assert set(fact) == {
        "type", "id", "content", "source", "tags", "category", "metadata",
        "created_at", "updated_at",
        # 0.2 memory items (SPEC 12)
        "layer", "kind", "confidence", "salience", "references", "expires_at",
        "fingerprint", "hits",
    }  # fmt: skip


# -- import as a merge ------------------------------------------------------------------------


def test_import_into_existing_adds_only_what_is_new(
    open_fresh: Callable[[str], sqlmem.MemoryDB],
) -> None:
    source, target = open_fresh("a.db"), open_fresh("b.db")
    source.history.append_many("s", [Message(role="user", content=f"m{i}") for i in range(3)])
    first = list(export_records(source))
    import_records(target, first)

    source.history.append_many("s", [Message(role="user", content=f"m{i}") for i in range(3, 6)])
    source.history.compact("s", keep_last=2, summary="five and six remain")
    counts = import_records(target, export_records(source))

    assert counts == ImportCounts(messages=3, messages_skipped=3, summaries=1)
    assert body(target) == body(source)
    assert target.history.count("s") == 2
    assert target.history.append("s", Message(role="user", content="next")) == 7


def test_import_never_renumbers_or_overwrites_messages(
    open_fresh: Callable[[str], sqlmem.MemoryDB],
) -> None:
    source, target = open_fresh("a.db"), open_fresh("b.db")
    source.history.append("s", Message(role="user", content="from the export"))
    target.history.append("s", Message(role="user", content="already here"))
    counts = import_records(target, export_records(source))
    assert counts.messages == 0 and counts.messages_skipped == 1
    assert [m.content for m in target.history.get_all("s")] == ["already here"]


def test_messages_imported_with_search_off_are_indexed_on_the_next_open(
    open_fresh: Callable[[str], sqlmem.MemoryDB], tmp_path: Path
) -> None:
    """Import writes messages with its own SQL: it must flag their session as the store's
    append does (sessions.unindexed), or they would never enter the FTS index."""
    source = open_fresh("a.db")
    source.history.append("s", Message(role="user", content="hello wombat"))
    path = tmp_path / "off.db"
    with sqlmem.open(path, sqlmem.StoreConfig(history_search=False)) as off:
        assert import_records(off, export_records(source)).messages == 1
    with sqlmem.open(path) as on:
        assert [m.content for m in on.history.search("wombat")] == ["hello wombat"]
        with on._engine.read() as conn:
            assert conn.execute("SELECT count(*) FROM sessions WHERE unindexed").get == 0


def test_an_older_fact_never_replaces_a_newer_one(
    open_fresh: Callable[[str], sqlmem.MemoryDB],
) -> None:
    old = datetime(2024, 1, 1, tzinfo=UTC)
    source, target = open_fresh("a.db"), open_fresh("b.db")
    source.facts.index(Fact(id="f", content="old text", created_at=old, updated_at=old))
    target.facts.index(
        Fact(id="f", content="new text", created_at=old, updated_at=old + timedelta(days=1))
    )
    counts = import_records(target, export_records(source))
    assert counts.facts == 0 and counts.facts_skipped == 1
    assert target.facts.get("f").content == "new text"  # type: ignore[union-attr]

    counts = import_records(source, export_records(target))  # and newer does win
    assert counts.facts == 1
    assert source.facts.get("f").content == "new text"  # type: ignore[union-attr]


def test_a_fact_without_id_gets_a_stable_one(
    open_fresh: Callable[[str], sqlmem.MemoryDB],
) -> None:
    db = open_fresh("a.db")
    records: list[dict[str, Any]] = [
        {"format": "sqlmem-export", "format_version": 1},
        {"type": "fact", "content": "The user likes tea."},
    ]
    import_records(db, records)
    import_records(db, records)
    assert db.facts.count() == 1
    assert db.facts.search("tea")[0].id.startswith("fact-")


# -- refusals ---------------------------------------------------------------------------------

HEADER = json.dumps({"format": "sqlmem-export", "format_version": 1}).encode() + b"\n"


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "empty import"),
        ([b'{"hello": 1}\n'], "line 1: not a sqlmem export"),
        ([b'{"format": "sqlmem-export", "format_version": 4}\n'], "format_version 4 is newer"),
        ([HEADER, b"\n", b"{not json\n"], "line 3: not valid JSON"),
        ([HEADER, b'"a string"\n'], "line 2: a record must be a JSON object"),
        ([HEADER, b'{"type": "unicorn"}\n'], "line 2: unknown record type"),
        ([HEADER, b'{"type": "message", "session_id": "s", "seq": 1}\n'], "line 2:"),
        ([HEADER, b'{"type": "message", "session_id": "s", "seq": 0, "role": "user"}\n'],
         "line 2: seq must be"),
        ([HEADER, b'{"type": "message", "session_id": "", "seq": 1, "role": "user"}\n'],
         "line 2: session_id"),
        ([HEADER, b'{"type": "message", "session_id": "s", "seq": 1, "role": "bot"}\n'],
         "line 2: record.role"),
        ([HEADER, b'{"type": "fact", "id": "f", "content": "  "}\n'], "line 2:"),
        ([HEADER, b'{"type": "fact", "id": "f", "content": "x", "category": "../x"}\n'],
         "line 2:"),
        ([HEADER, b'{"type": "summary", "session_id": "s", "summary": "\\ud800"}\n'],
         "line 2: summary contains a lone surrogate"),
        ([HEADER, b"\xff\xfe\n"], "line 2: not UTF-8"),
    ],
)  # fmt: skip
def test_bad_files_are_refused_with_their_line(
    open_fresh: Callable[[str], sqlmem.MemoryDB], lines: list[bytes], message: str
) -> None:
    db = open_fresh("a.db")
    with pytest.raises(ExportFormatError, match=message.replace("(", r"\(")):
        import_lines(db, lines)
    assert body(db) == []


def test_newer_format_changes_nothing(open_fresh: Callable[[str], sqlmem.MemoryDB]) -> None:
    db = open_fresh("a.db")
    header = {"format": "sqlmem-export", "format_version": 99}
    fact = {"type": "fact", "id": "f", "content": "x"}
    with pytest.raises(ExportFormatError, match="upgrade sqlmem"):
        import_records(db, [header, fact])
    assert db.facts.count() == 0
    assert isinstance(ExportFormatError("x"), sqlmem.SqlmemError)


def test_export_pages_through_large_tables(
    open_fresh: Callable[[str], sqlmem.MemoryDB], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = open_fresh("a.db")
    for session in ("b", "a", "c"):
        db.history.append_many(session, [Message(role="user", content=str(i)) for i in range(5)])
        db.history.compact(session, keep_last=2, summary=f"summary of {session}")
    db.facts.index_many([Fact(id=f"f{i}", content=f"fact {i}") for i in range(7)])
    whole = body(db)
    monkeypatch.setattr("sqlmem.sqlite.transfer.export._PAGE", 2)
    assert body(db) == whole
    assert [(r["session_id"], r["seq"]) for r in whole if r["type"] == "message"] == [
        (s, i) for s in "abc" for i in range(1, 6)
    ]
    assert len(whole) == 15 + 3 + 7
