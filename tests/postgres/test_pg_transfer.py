"""Moving an agent between backends (issue 21): the PostgreSQL export writes the SQLite
export's format record for record, and each backend imports the other's export.

SQLite -> PostgreSQL -> SQLite gives the same records; importing twice adds nothing;
the imported agent searches with the same BM25 scores as the SQLite file (the statistics
came along), appends continue the seqs, and a bad record stops the import at its line.
Workspace documents and their revisions move too, merged by the SQLite import's rules
(the two imports agree); the frameworks' kv and checkpoint records (format 2) move too.
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
from sqlmem.sqlite.transfer import export as sqlite_export
from sqlmem.sqlite.transfer import importer as sqlite_import

T0 = datetime(2025, 1, 31, 9, 0, tzinfo=timezone.utc)


def _fill(db: Any) -> None:
    """Messages, summaries and facts of every shape (documents: `_fill_docs`)."""
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


# -- documents and revisions -----------------------------------------------------------------


def _fill_docs(db: Any) -> None:
    """Documents with revisions (some pruned), flags, NUL, CJK, several blocks, a daily
    note and an edit."""
    d = db.docs
    for i in range(5):  # doc_revisions=3 below: revisions 1 and 2 of MEMORY.md are pruned
        d.write("MEMORY.md", f"# Memory\n\nthe user likes coffee, version {i}\n\nsecond block {i}")
    d.edit("MEMORY.md", "second block 4", "second block edited about tea")
    d.write("notes/run.md", "周日早上跑步\n\nNUL \x00 inside\n\n\n\nlast block", enabled=False)
    d.write("notes/run.md", "周日早上跑步 again\n\nNUL \x00 inside", sort_order=-7)
    d.write("tools/deploy.md", "deploys run on friday\nrollback with care", sort_order=2)
    d.append("tools/deploy.md", "coffee before deploys")
    d.append_daily("met ann about the deploy", day=T0.date())
    d.write("empty.md", "")


def _doc_state(db: Any, queries: tuple[str, ...]) -> dict[str, Any]:
    """Everything the document store shows: documents, revisions and their contents,
    prompt renderings, search hits (scores to 9 places: FTS5 and PostgreSQL BM25)."""
    d = db.docs
    state: dict[str, Any] = {"list": d.list(), "files": d.render_files()}
    for info in d.list():
        revisions = d.revisions(info.path)
        contents = [d.read_revision(info.path, r.revision) for r in revisions]
        state[info.path] = (d.read(info.path), revisions, contents)
    for query in queries:
        state[query] = [(h.path, h.start_line, h.end_line, h.text, round(h.score, 9))
                        for h in d.search(query)]  # fmt: skip
    return state


QUERIES = ("coffee", "deploy OR tea", "跑步", "second block", "nul inside")


def _docs_canonical(records: Any) -> list[dict[str, Any]]:
    """The document and revision records, in path order (SQLite writes its row order)."""
    docs = [r for r in records if r["type"] in ("document", "revision")]
    return sorted(docs, key=lambda r: (r["type"], r["path"], r["revision"]))


def test_documents_move_sqlite_to_postgres_and_back_unchanged(
    open_pg: Callable[..., Any], open_db: Callable[..., sqlmem.MemoryDB], tmp_path: Path
) -> None:
    source = open_db(tmp_path / "source.db", doc_revisions=3)
    _fill_docs(source)
    _fill(source)
    original = _body(sqlite_export.export_records(source))
    want = _doc_state(source, QUERIES)
    documents = sum(r["type"] == "document" for r in original)
    revisions = sum(r["type"] == "revision" for r in original)
    assert (documents, revisions) == (5, 5)

    pg = open_pg(doc_revisions=3)
    counts = transfer.import_records(pg, sqlite_export.export_records(source))
    assert (counts.documents, counts.revisions, counts.messages, counts.facts) == (5, 5, 6, 3)
    assert _doc_state(pg, QUERIES) == want
    report = pg.check()
    assert report.ok, report.problems
    exported = _body(transfer.export_records(pg))
    assert _docs_canonical(exported) == _docs_canonical(original)
    assert [r for r in exported if r["type"] not in ("document", "revision")] == [
        r for r in original if r["type"] not in ("document", "revision")
    ]

    again = transfer.import_records(pg, sqlite_export.export_records(source))
    assert (again.documents, again.revisions) == (0, 0)  # idempotent
    assert (again.documents_skipped, again.revisions_skipped) == (5, 5)
    assert _body(transfer.export_records(pg)) == exported
    assert pg.check().ok

    back = open_db(tmp_path / "back.db", doc_revisions=3)
    counts = sqlite_import.import_records(back, transfer.export_records(pg))
    assert (counts.documents, counts.revisions) == (5, 5)
    assert _doc_state(back, QUERIES) == want
    assert _docs_canonical(_body(sqlite_export.export_records(back))) == _docs_canonical(original)
    assert back.check().ok
    # The imported documents go on as the file's did: the next write is the next revision.
    assert pg.docs.write("MEMORY.md", "after the move").revision == 7
    assert [r.revision for r in pg.docs.revisions("MEMORY.md")] == [6, 5, 4]
    assert pg.check().ok


def _export_docs(db: Any) -> list[dict[str, Any]]:
    return [r for r in sqlite_export.export_records(db) if r.get("type") != "fact"]


def test_documents_merge_as_the_sqlite_import_does(
    open_pg: Callable[..., Any], open_db: Callable[..., sqlmem.MemoryDB], tmp_path: Path
) -> None:
    """Files of one agent at different times and of a sibling, imported in an awkward
    order: PostgreSQL ends as the SQLite import does (newer revisions win, a replaced
    content is kept as the revision it was, revisions are pruned to `doc_revisions`, an
    older file rolls nothing back)."""
    agent = open_db(tmp_path / "agent.db", doc_revisions=3)
    agent.docs.write("a.md", "alpha one")
    early = _export_docs(agent)
    sibling = open_db(tmp_path / "sibling.db", doc_revisions=3)
    sqlite_import.import_records(sibling, early)
    sibling.docs.write("a.md", "alpha written by the sibling\n\nin two blocks")
    sibling.docs.write("s.md", "only the sibling has this")
    for i in range(1, 4):
        sibling.docs.write("c.md", f"charlie sibling {i}")
    for i in range(2, 5):
        agent.docs.write("a.md", f"alpha {i}")
    for i in range(1, 7):
        agent.docs.write("c.md", f"charlie agent {i}")
    agent.docs.write("b.md", "bravo")
    late = _export_docs(agent)
    files = [_export_docs(sibling), late, early, late]

    sqlite_target = open_db(tmp_path / "target.db", doc_revisions=3)
    sqlite_target.docs.write("b.md", "a local bravo, written later")
    pg = open_pg(doc_revisions=3)
    pg.docs.write("b.md", "a local bravo, written later")
    for records in files:
        want = sqlite_import.import_records(sqlite_target, iter(records))
        got = transfer.import_records(pg, iter(records))
        assert got == want
        assert pg.check().ok
    queries = ("alpha", "bravo OR sibling", "charlie", "blocks")
    state, mine = _doc_state(sqlite_target, queries), _doc_state(pg, queries)
    for each in (state, mine):  # b.md was written locally, at different times on each side
        each["b.md"] = each["b.md"][1:]
        each["list"] = [(i.path, i.revision, i.size) for i in each["list"]]
    assert mine == state
    d = pg.docs
    assert d.read("a.md").content == "alpha 4"  # type: ignore[union-attr]
    assert [r.revision for r in d.revisions("a.md")] == [3, 2, 1]
    assert d.read_revision("a.md", 2).startswith("alpha written by the sibling")  # kept
    assert [r.revision for r in d.revisions("c.md")] == [5, 4, 3]  # 1 and 2 pruned
    assert d.read_revision("c.md", 3) == "charlie sibling 3"
    assert d.read("b.md").content == "a local bravo, written later"  # type: ignore[union-attr]
    assert [h.path for h in d.search("blocks")] == []


def test_a_revision_without_its_document_is_skipped(open_pg: Callable[..., Any]) -> None:
    stamp = "2025-01-31T09:00:00.000+00:00"
    pg = open_pg()
    counts = transfer.import_records(pg, [
        {"format": "sqlmem-export", "format_version": 1},
        {"type": "revision", "path": "gone.md", "revision": 1, "content": "x",
         "updated_at": stamp},
        {"type": "document", "path": "MEMORY.md", "content": "x", "enabled": True,
         "sort_order": 0, "revision": 3, "created_at": stamp, "updated_at": stamp},
        {"type": "revision", "path": "MEMORY.md", "revision": 3, "content": "current",
         "updated_at": stamp},
        {"type": "revision", "path": "MEMORY.md", "revision": 1, "content": "old",
         "updated_at": stamp},
    ])  # fmt: skip
    assert (counts.documents, counts.revisions, counts.revisions_skipped) == (1, 1, 2)
    assert [r.revision for r in pg.docs.revisions("MEMORY.md")] == [1]
    assert pg.docs.read_revision("MEMORY.md", 1) == "old"
    assert pg.check().ok
    later = "2025-01-31T09:00:00.001+00:00"  # the same revision, written later elsewhere
    counts = transfer.import_records(pg, [
        {"format": "sqlmem-export", "format_version": 2},
        {"type": "document", "path": "MEMORY.md", "content": "y", "enabled": False,
         "sort_order": 5, "revision": 3, "created_at": stamp, "updated_at": later},
    ])  # fmt: skip
    assert (counts.documents, counts.revisions) == (1, 0)
    found = pg.docs.read("MEMORY.md")
    # the replaced "x" is kept as the revision 3 it was; "y" becomes the next revision
    assert found is not None and (found.content, found.enabled, found.revision) == ("y", False, 4)
    assert [r.revision for r in pg.docs.revisions("MEMORY.md")] == [3, 1]
    assert pg.docs.read_revision("MEMORY.md", 3) == "x"
    assert [h.text for h in pg.docs.search("y x")] == ["y"]
    assert pg.check().ok


@settings(max_examples=20)
@given(
    writes=st.lists(
        st.tuples(st.sampled_from(["a.md", "b/c.md"]), st.text(max_size=40)), max_size=6
    ),
)
def test_any_documents_move_between_postgres_agents(
    open_pg: Callable[..., Any], writes: list[tuple[str, str]]
) -> None:
    """Hypothesis: any contents and revisions, exported and imported on another agent,
    export back identically, with exact search statistics."""
    pg_a, pg_b = open_pg(doc_revisions=2), open_pg(doc_revisions=2)
    for path, content in writes:
        pg_a.docs.write(path, content)
    first = _body(transfer.export_records(pg_a))
    transfer.import_records(pg_b, transfer.export_records(pg_a))
    assert _body(transfer.export_records(pg_b)) == first
    report = pg_b.check()
    assert report.ok, report.problems
    for query in ("a", "the"):
        assert pg_b.docs.search(query) == pg_a.docs.search(query)


# -- format 2: the frameworks' records -------------------------------------------------------


def test_kv_and_checkpoint_records_move_both_ways(
    open_pg: Callable[..., Any], open_db: Callable[..., sqlmem.MemoryDB], tmp_path: Path
) -> None:
    """SQLite -> PostgreSQL -> SQLite carries the frameworks' records unchanged (keys with
    NUL, empty values, checkpoints and pending writes); a second import stores nothing."""
    source = open_db()
    source.kv.set_many("langchain:ns", [("k1", b"\x00v"), ("k\x002", b"")])
    source.kv.set_many("langgraph:x", [("long", b"v" * 10)], ttl_ms=10**9)
    saver = source.checkpoints
    saver.put(("t1", "", "c0"), None, ("msgpack", b"\x01"), ("json", b"{}"), None)
    saver.put(("t1", "", "c1"), "c0", ("msgpack", b"\x02"), ("json", b"{}"), "run")
    saver.put_writes(("t1", "", "c1"), [("task", 0, "ch", "msgpack", b"\x03")], "", replace=False)
    source.facts.index(Fact(id="f", content="a fact among the blobs"))
    source.history.append("s", Message(role="user", content="hello"))
    records = list(sqlite_export.export_records(source))
    assert {"kv", "checkpoint", "checkpoint_write"} <= {r.get("type") for r in records}

    pg = open_pg()
    counts = transfer.import_records(pg, iter(records))
    assert (counts.kv, counts.checkpoints, counts.checkpoint_writes) == (3, 2, 1)
    assert (counts.facts, counts.facts_skipped, counts.messages) == (1, 0, 1)
    assert pg.kv.get_many("langchain:ns", ["k1", "k\x002"]) == [b"\x00v", b""]
    row = pg.checkpoints.get("t1", "", None)
    assert row is not None and row.checkpoint_id == "c1" and len(row.writes) == 1
    again = transfer.import_records(pg, iter(records))
    assert (again.kv, again.checkpoints, again.checkpoint_writes) == (0, 0, 0)
    assert (again.kv_skipped, again.checkpoints_skipped, again.checkpoint_writes_skipped) == (
        3, 2, 1
    )  # fmt: skip

    exported = list(transfer.export_records(pg))
    framework = [
        r for r in _body(exported) if r["type"] in ("kv", "checkpoint", "checkpoint_write")
    ]
    expected = [r for r in _body(records) if r["type"] in ("kv", "checkpoint", "checkpoint_write")]
    key = repr
    assert sorted(framework, key=key) == sorted(expected, key=key)
    back = open_db(tmp_path / "back.db")
    sqlite_import.import_records(back, iter(exported))
    assert back.kv.get_many("langchain:ns", ["k1", "k\x002"]) == [b"\x00v", b""]
    assert back.checkpoints.get("t1", "", "c0") == source.checkpoints.get("t1", "", "c0")


def test_concurrent_imports_of_one_file_store_each_document_once(
    open_pg: Callable[..., Any], open_db: Callable[..., sqlmem.MemoryDB]
) -> None:
    """Two servers importing the same file into one agent at once: the document corpus
    row orders them, so one stores each document and the other finds it stored (no
    duplicate-key error, statistics exact)."""
    import threading

    source = open_db()
    for i in range(40):
        source.docs.write(f"n{i}.md", f"note {i}\n\nabout tea")
        source.docs.write(f"n{i}.md", f"note {i}\n\nabout coffee")
    records = list(sqlite_export.export_records(source))
    pg = open_pg()
    start = threading.Barrier(2)
    results: list[Any] = []

    def run() -> None:
        start.wait()
        try:
            results.append(transfer.import_records(pg, iter(records)))
        except Exception as exc:  # reported by the assertion below
            results.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(not isinstance(r, Exception) for r in results), results
    assert sum(r.documents for r in results) == 40
    assert sum(r.revisions for r in results) == 40
    assert sum(r.documents_skipped + r.revisions_skipped for r in results) == 80
    assert pg.check().ok
    assert len(pg.docs.search("coffee", top_k=100)) == 40
