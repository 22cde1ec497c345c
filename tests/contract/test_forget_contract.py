"""`db.forget(source)` on every backend: a session, a message or a document goes with
every fact derived only from it, in one transaction; facts also known from elsewhere stay."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from targets import BACKENDS, Target, backend_target

import sqlmem
from sqlmem import Fact, ForgetReport, InvalidArgumentError, Message
from sqlmem.protocols import Database


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    target: Target = backend_target(request, tmp_path)
    opened = sqlmem.open(target.target, agent_id=target.agent_id)
    yield opened
    opened.close()


def _ids(db: Database) -> set[str]:
    return {f.id for f in db.facts.list(limit=100)}


def _chat(db: Database, session: str, n: int) -> None:
    for i in range(n):
        db.history.append(session, Message(role="user", content=f"{session} says {i}"))


def test_forget_a_session_and_its_derived_facts(db: Database) -> None:
    _chat(db, "s1", 3)
    _chat(db, "s2", 1)
    db.history.compact("s1", keep_last=1, summary="a summary")
    only = db.facts.remember(Fact(content="from s1", references=["msg:s1#1", "msg:s1#2"]))
    mixed = db.facts.remember(Fact(content="also s2", references=["msg:s1#1", "msg:s2#1"]))
    by_source = db.facts.remember(Fact(content="no refs", source="s1"))
    other = db.facts.remember(Fact(content="elsewhere", source="s2"))
    report = db.forget("s1")
    assert report == ForgetReport(messages=3, facts=2, documents=0, revisions=0)
    assert db.history.get_all("s1", include_archived=True) == []
    assert db.history.get_summary("s1") == "" and "s1" not in db.history.sessions()
    assert _ids(db) == {mixed, other}
    assert db.facts.get(only) is None and db.facts.get(by_source) is None
    assert len(db.history.get_all("s2")) == 1


def test_forget_one_message(db: Database) -> None:
    _chat(db, "s", 4)
    derived = db.facts.remember(Fact(content="derived", references=["msg:s#2"]))
    kept = db.facts.remember(Fact(content="kept", references=["msg:s#2", "msg:s#3"]))
    assert db.forget("msg:s#9") == ForgetReport()
    assert db.forget("msg:s#2") == ForgetReport(messages=1, facts=1)
    assert [m.seq for m in db.history.get_all("s")] == [1, 3, 4]
    assert db.history.count("s") == 3
    assert _ids(db) == {kept}
    assert db.facts.get(derived) is None
    kept_fact = db.facts.get(kept)
    assert kept_fact is not None and kept_fact.references == ["msg:s#3"]  # dangling ref gone
    assert db.history.append("s", Message(role="user", content="next")) == 5
    assert db.forget("msg:s#2") == ForgetReport()  # already gone
    assert db.forget("msg:nobody#1") == ForgetReport()


def test_forget_a_document_with_every_revision(db: Database) -> None:
    db.docs.write("MEMORY.md", "one")
    db.docs.write("MEMORY.md", "two")
    db.docs.write("NOTES.md", "notes")
    from_doc = db.facts.remember(Fact(content="from doc", references=["doc:MEMORY.md@1"]))
    both = db.facts.remember(
        Fact(content="both revisions", references=["doc:MEMORY.md@1", "doc:MEMORY.md"])
    )
    other = db.facts.remember(Fact(content="other doc", references=["doc:NOTES.md@1"]))
    report = db.forget("MEMORY.md")
    assert (report.documents, report.facts, report.messages) == (1, 2, 0)
    assert report.revisions == len(["one"])  # the earlier revisions (`docs.revisions`)
    assert db.docs.read("MEMORY.md") is None
    assert _ids(db) == {other}
    assert db.facts.get(from_doc) is None and db.facts.get(both) is None
    assert db.forget("doc:NOTES.md").documents == 1


def test_forgetting_the_live_fact_of_a_key_makes_the_previous_live(db: Database) -> None:
    _chat(db, "s", 2)
    old = db.facts.remember(Fact(content="lives in Paris", key="user.city"))
    db.facts.remember(Fact(content="lives in Berlin", key="user.city", references=["msg:s#2"]))
    db.forget("msg:s#2")
    assert [f.id for f in db.facts.search("lives")] == [old]


def test_forget_refuses_what_is_not_a_source(db: Database) -> None:
    for bad in ["", "msg:no-seq", "msg:s#x", "doc:", 5]:
        with pytest.raises(InvalidArgumentError):
            db.forget(bad)  # type: ignore[arg-type]


def test_forgetting_an_unknown_session_changes_nothing(db: Database) -> None:
    _chat(db, "s", 2)
    db.facts.remember(Fact(content="derived", references=["msg:s#1"]))
    assert db.forget("unknown-session") == ForgetReport()
    assert len(_ids(db)) == 1 and db.history.count("s") == 2


def test_stats_count_live_facts_and_every_fact_without_a_vector(db: Database) -> None:
    db.facts.remember(Fact(content="lives in Paris", key="user.city"))
    db.facts.remember(Fact(content="lives in Berlin", key="user.city"))
    stats = db.stats()
    assert stats["facts"] == 1  # the live one, as count() says
    assert stats["facts_without_vectors"] == 0  # no embedder: nothing waits for embed_pending
