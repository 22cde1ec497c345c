"""Moving an agent between backends (issue 21): the PostgreSQL export writes the SQLite
export's format record for record, and each backend imports the other's export.

SQLite -> PostgreSQL -> SQLite gives the same records; importing twice adds nothing;
the imported agent searches with the same BM25 scores as the SQLite file (the statistics
came along), appends continue the seqs, and a bad record stops the import at its line.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem import Fact, Message
from sqlmem.postgres import transfer
from sqlmem.rules.export_format import ExportFormatError
from sqlmem.sqlite import export as sqlite_export
from sqlmem.sqlite import importer as sqlite_import

T0 = datetime(2025, 1, 31, 9, 0, tzinfo=timezone.utc)


def _fill(db: Any) -> None:
    """Every kind of record the format has, but documents (not on PostgreSQL here)."""
    h, f = db.history, db.facts
    h.append_many("chat:1", [
        Message(role="user", content="hello \x00 nul and 跑步", created_at=T0),
        Message(role="assistant", content="", tool_calls=[{"id": "c1", "name": "lookup",
                "arguments": "{}"}], created_at=T0),
        Message(role="tool", content="result", tool_call_id="c1", is_error=True,
                metadata={"k": [1, "二"]}, created_at=T0),
        Message(role="user", content="the deploy went fine", name="ann", created_at=T0),
        Message(role="assistant", content="noted", created_at=T0),
    ])  # fmt: skip
    h.compact("chat:1", 2, summary="greeting and a lookup")
    h.append("chat:1", Message(role="user", content="popped soon", created_at=T0))
    h.pop("chat:1")
    h.append("chat:2 \ue000 odd", Message(role="user", content="second session", created_at=T0))
    h.set_summary("only-summary", "a session with a summary and no message")
    f.index_many([
        Fact(id="a", content="the user likes dark roast coffee", tags=["pref", "coffee"],
             category="user/taste", metadata={"since": 2021}, created_at=T0, updated_at=T0),
        Fact(id="b\x00", content="deploys run on friday", source="ops", created_at=T0,
             updated_at=T0 + timedelta(seconds=1)),
        Fact(id="c", content="用户喜欢周日早上跑步", layer="episodic", kind="event",
             confidence=0.7, salience=0.9, references=["chat:1#1"],
             expires_at=T0 + timedelta(days=3650), created_at=T0, updated_at=T0),
    ])  # fmt: skip
    f.remember(Fact(content="the user likes dark roast coffee"))  # hits 2 on "a"


def _body(records: Any) -> list[dict[str, Any]]:
    """The records after the header (whose exported_at and schema_version differ)."""
    out = list(records)
    assert out[0]["format"] == "sqlmem-export"
    return out[1:]


def test_sqlite_to_postgres_and_back_keeps_every_record(
    open_pg: Callable[..., Any], open_db: Callable[..., sqlmem.MemoryDB], tmp_path: Path
) -> None:
    source = open_db(tmp_path / "source.db")
    _fill(source)
    original = _body(sqlite_export.export_records(source))
    assert {r["type"] for r in original} == {"message", "summary", "fact"}

    pg = open_pg()
    counts = transfer.import_records(pg, sqlite_export.export_records(source))
    assert (counts.messages, counts.facts, counts.summaries) == (6, 3, 2)
    assert _body(transfer.export_records(pg)) == original

    back = open_db(tmp_path / "back.db")
    sqlite_import.import_records(back, transfer.export_records(pg))
    assert _body(sqlite_export.export_records(back)) == original

    again = transfer.import_records(pg, iter(list(sqlite_export.export_records(source))))
    assert (again.messages, again.facts, again.summaries) == (0, 0, 0)  # idempotent
    assert (again.messages_skipped, again.facts_skipped) == (6, 3)
    assert _body(transfer.export_records(pg)) == original


def test_the_imported_agent_behaves_as_the_file_did(
    open_pg: Callable[..., Any], open_db: Callable[..., sqlmem.MemoryDB], tmp_path: Path
) -> None:
    source = open_db()
    _fill(source)
    pg = open_pg()
    transfer.import_records(pg, sqlite_export.export_records(source))
    for query in ("coffee", "deploy friday", "跑步", "roast OR missing"):
        for mode in ("any", "all"):
            want = [(x.id, round(x.score or 0, 9)) for x in source.facts.search(query, mode=mode)]
            got = [(x.id, round(x.score or 0, 9)) for x in pg.facts.search(query, mode=mode)]
            assert got == want, (query, mode)
    assert [m.seq for m in pg.history.search("deploy")] == [
        m.seq for m in source.history.search("deploy")
    ]
    for session in source.history.sessions():
        assert pg.history.count(session) == source.history.count(session)
        assert pg.history.get_summary(session) == source.history.get_summary(session)
        assert [m.content for m in pg.history.get_recent(session, 10)] == [
            m.content for m in source.history.get_recent(session, 10)
        ]
    # A popped seq is not in the format: compare with a SQLite import of the same file.
    copy = open_db(tmp_path / "copy.db")
    sqlite_import.import_records(copy, sqlite_export.export_records(source))
    message = Message(role="user", content="after the move")
    assert pg.history.append("chat:1", message) == copy.history.append("chat:1", message)
    assert pg.facts.get("a") == source.facts.get("a")


def test_a_bad_record_stops_the_import_at_its_line(open_pg: Callable[..., Any]) -> None:
    pg = open_pg()
    lines = [
        b'{"format": "sqlmem-export", "format_version": 1}',
        b'{"type": "fact", "id": "ok", "content": "kept"}',
        b'{"type": "message", "session_id": "s", "seq": 0, "role": "user", "content": "x"}',
    ]
    with pytest.raises(ExportFormatError, match="line 3"):
        transfer.import_lines(pg, lines)
    with pytest.raises(ExportFormatError, match="newer"):
        transfer.import_lines(pg, [b'{"format": "sqlmem-export", "format_version": 99}'])
    assert pg.facts.count() == 0  # the bad line was in the first batch: nothing written


def test_documents_are_counted_as_skipped(open_pg: Callable[..., Any]) -> None:
    stamp = "2025-01-31T09:00:00.000+00:00"
    counts = transfer.import_records(open_pg(), [
        {"format": "sqlmem-export", "format_version": 1},
        {"type": "document", "path": "MEMORY.md", "content": "x", "enabled": True,
         "sort_order": 0, "revision": 1, "created_at": stamp, "updated_at": stamp},
    ])  # fmt: skip
    assert counts.documents_skipped == 1 and counts.documents == 0


@settings(max_examples=25)
@given(
    contents=st.lists(st.text(max_size=30), min_size=1, max_size=6),
    fact_texts=st.lists(st.text(min_size=1, max_size=30), max_size=4),
    session=st.text(min_size=1, max_size=12),
)
def test_any_text_moves_between_backends(
    open_pg: Callable[..., Any], contents: list[str], fact_texts: list[str], session: str
) -> None:
    """Hypothesis: what the in-memory twin holds, exported by the SQLite store and
    imported on PostgreSQL, exports back identically."""
    if any(0xD800 <= ord(c) <= 0xDFFF for c in session + "".join(contents + fact_texts)):
        return  # lone surrogates are refused before anything is stored
    pg_a, pg_b = open_pg(), open_pg()
    try:
        pg_a.history.append_many(session, [Message(role="user", content=c, created_at=T0)
                                           for c in contents])  # fmt: skip
        pg_a.facts.index_many([Fact(content=t + " x", created_at=T0, updated_at=T0)
                               for t in fact_texts])  # fmt: skip
    except sqlmem.InvalidArgumentError:
        return
    first = _body(transfer.export_records(pg_a))
    transfer.import_records(pg_b, transfer.export_records(pg_a))
    assert _body(transfer.export_records(pg_b)) == first


def test_vectors_move_with_their_facts(pg_dsn: str, tmp_path: Path) -> None:
    """With an embedder on both sides, the vector records come along byte for byte (no
    re-embedding on import: the stored vector is the file's)."""
    from pgserver import new_agent_id

    import sqlmem.postgres as sp
    from sqlmem.embedders import HashEmbedder

    embedder = HashEmbedder(32)
    with (
        sqlmem.open(tmp_path / "v.db", embedder=embedder) as source,
        sp.open(pg_dsn, new_agent_id(), embedder=embedder) as pg,
    ):
        source.facts.index_many([Fact(id=f"v{i}", content=f"vector fact {i} about tea",
                                      created_at=T0, updated_at=T0) for i in range(5)])  # fmt: skip
        original = _body(sqlite_export.export_records(source))
        assert sum(r["type"] == "vector" for r in original) == 5
        counts = transfer.import_records(pg, sqlite_export.export_records(source))
        assert (counts.facts, counts.vectors) == (5, 5)  # the file's vectors, not re-embedded
        assert _body(transfer.export_records(pg)) == original
        again = transfer.import_records(pg, sqlite_export.export_records(source))
        assert (again.facts, again.vectors) == (0, 0)
        want = [f.id for f in source.facts.search("tea", mode="vector")]
        assert [f.id for f in pg.facts.search("tea", mode="vector")] == want
