"""The two SQL backends run one port's Python: their history port IS the shared
`SqlHistoryPort` and their import port the shared `SqlImportPort`, each satisfying its
port protocol; and what that shared code does (a boundary move over holes, the summary
merge of an import, values bound by name in each dialect) behaves the same on both."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sqlmem import Fact, Message
from sqlmem.postgres.transfer import PostgresImportPort
from sqlmem.postgres.transfer import import_records as pg_import_records
from sqlmem.sqlite.transfer.importer import SQLiteImportPort
from sqlmem.sqlite.transfer.importer import import_records as sqlite_import_records
from sqlmem.stores.documents_port import DocumentPort
from sqlmem.stores.facts_port import FactStorePort
from sqlmem.stores.history_port import HistoryPort
from sqlmem.stores.sql_documents import SqlDocumentPort
from sqlmem.stores.sql_facts import SqlFactPort
from sqlmem.stores.sql_history import SqlHistoryPort
from sqlmem.stores.sql_import import SqlImportPort
from sqlmem.stores.transfer_port import ImportPort

_IMPORT: dict[str, tuple[Callable[[Any], Any], Callable[..., Any]]] = {
    "sqlite": (SQLiteImportPort, sqlite_import_records),
    "postgres": (PostgresImportPort, pg_import_records),
}


@pytest.fixture(params=["sqlite", "postgres"])
def sql_db(request: pytest.FixtureRequest) -> Any:
    if request.param == "postgres":
        return request.getfixturevalue("open_pg")()
    return request.getfixturevalue("open_db")()


def _backend(db: Any) -> str:
    return "postgres" if type(db).__module__.startswith("sqlmem.postgres") else "sqlite"


def test_history_port_is_the_shared_sql_port(sql_db: Any) -> None:
    port = sql_db.history.port
    assert isinstance(port, SqlHistoryPort)
    assert isinstance(port, HistoryPort)


def test_fact_port_is_the_shared_sql_port(sql_db: Any) -> None:
    port = sql_db.facts.port
    assert isinstance(port, SqlFactPort)
    assert isinstance(port, FactStorePort)


def test_fact_deletes_count_what_went(sql_db: Any) -> None:
    """The shared delete and expire: one id, many (repeated, unknown, escaped) ids, and
    the expired facts, each counted once."""
    from datetime import datetime, timedelta, timezone

    facts = sql_db.facts
    past = datetime.now(timezone.utc) - timedelta(days=1)
    for i, fact_id in enumerate(["a", "b\x00c", "d", "e"]):
        facts.index(Fact(id=fact_id, content=f"fact {i} about tags", tags=["t\x00", "u"]))
    facts.index(Fact(id="old", content="an old fact", expires_at=past))
    assert facts.tags() == {"t\x00": 4, "u": 4}
    assert facts.delete_many(["a"]) == 1
    assert facts.delete_many(["b\x00c", "b\x00c", "nope", "d"]) == 2
    assert facts.get("d") is None and facts.get("e") is not None
    assert facts.expire() == 1
    assert facts.expire() == 0
    assert facts.count() == 1
    assert facts.tags() == {"t\x00": 1, "u": 1}


def test_document_port_is_the_shared_sql_port(sql_db: Any) -> None:
    port = sql_db.docs.port
    assert isinstance(port, SqlDocumentPort)
    assert isinstance(port, DocumentPort)


def test_document_flags_and_contents(sql_db: Any) -> None:
    """The shared flag writes say whether the document is there; contents come back
    decoded, in prompt order."""
    docs = sql_db.docs
    docs.write("b.md", "second\x00")
    docs.write("a.md", "first")
    port = docs.port
    assert port.set_enabled("b.md", False) is True
    assert port.set_enabled("a.md", True) is True
    assert port.set_enabled("nope.md", False) is False
    assert port.set_sort_order("a.md", 5) is True
    assert port.set_sort_order("nope.md", 5) is False
    assert port.set_sort_order("b.md", 1) is True
    assert docs.read("b.md").content == "second\x00"
    assert [i.path for i in docs.list()] == ["b.md", "a.md"]
    assert port.enabled_contents() == [("a.md", "first")]
    assert port.all_contents() == [("a.md", "first"), ("b.md", "second\x00")]


def test_import_port_is_the_shared_sql_port(sql_db: Any) -> None:
    port = _IMPORT[_backend(sql_db)][0](sql_db)
    assert isinstance(port, SqlImportPort)
    assert isinstance(port, ImportPort)
    assert port.database is sql_db


def test_compact_over_holes_keeps_pairs_and_counts(sql_db: Any) -> None:
    """The shared archive: holes left by pop are walked over and taken off the counter."""
    h = sql_db.history
    h.append_many("s", [Message(role="user", content=f"m{i}") for i in range(6)])
    assert h.pop("s") is not None  # seq 6 becomes a hole
    h.append_many("s", [Message(role="user", content="m7"), Message(role="user", content="m8")])
    assert h.pop("s") is not None  # seq 8 too
    assert h.count("s") == 6
    assert h.compact("s", 2, "the start") == 4
    assert [m.seq for m in h.get_recent("s", 10)] == [5, 7]
    assert h.count("s") == 2
    assert h.get_summary("s") == "the start"
    assert [m.seq for m in h.get_all("s", include_archived=True)] == [1, 2, 3, 4, 5, 7]
    assert [m.seq for m in h.around("s", 4, before=1, after=2)] == [3, 4, 5, 7]


def test_import_merges_summaries_and_messages(sql_db: Any) -> None:
    """The shared import batch: the session merge, the message insert that counts what it
    added, the summary that counts only when it changed (text escaped where stored so)."""
    importer = _IMPORT[_backend(sql_db)][1]
    header = {"format": "sqlmem-export", "format_version": 1, "schema_version": 1}
    records = [
        header,
        {"type": "message", "session_id": "a\x00b", "seq": 1, "archived": True,
         "role": "user", "content": "x\x00y"},
        {"type": "message", "session_id": "a\x00b", "seq": 2, "archived": False,
         "role": "assistant", "content": "hi"},
        {"type": "summary", "session_id": "a\x00b", "summary": "s\x00um", "archived_seq": 1},
    ]  # fmt: skip
    first = importer(sql_db, records)
    assert (first.messages, first.messages_skipped, first.summaries) == (2, 0, 1)
    again = importer(sql_db, records)
    assert (again.messages, again.messages_skipped, again.summaries) == (0, 2, 0)
    h = sql_db.history
    assert h.get_summary("a\x00b") == "s\x00um"
    assert [m.content for m in h.get_all("a\x00b", include_archived=True)] == ["x\x00y", "hi"]
    assert h.count("a\x00b") == 1
    assert h.sessions() == ["a\x00b"]
