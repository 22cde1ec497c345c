"""Import never replaces a document's content without keeping it as a revision, on the
SQLite importer and the PostgreSQL transfer alike.

Regression: when the file and the target held a document at the same revision number and
the file's `updated_at` was later (two copies edited apart), the target's content was
replaced and kept nowhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem.postgres import transfer as pg_transfer
from sqlmem.sqlite.transfer import export as sqlite_export
from sqlmem.sqlite.transfer import importer as sqlite_import


def _docs_records(db: Any) -> list[dict[str, Any]]:
    return [r for r in sqlite_export.export_records(db) if r.get("type") != "fact"]


@pytest.fixture(params=["sqlite", "postgres"])
def target(
    request: pytest.FixtureRequest, open_db: Callable[..., sqlmem.MemoryDB], tmp_path: Path
) -> tuple[Any, Callable[[Any, list[dict[str, Any]]], Any]]:
    """(a database to import into, `load(db, records)`)."""
    if request.param == "postgres":
        return request.getfixturevalue("open_pg")(), lambda db, r: pg_transfer.import_records(
            db, iter(r)
        )
    return open_db(tmp_path / "target.db"), lambda db, r: sqlite_import.import_records(db, iter(r))


def test_an_equal_revision_with_a_later_date_keeps_the_replaced_content(
    target: Any, open_db: Callable[..., sqlmem.MemoryDB], tmp_path: Path
) -> None:
    db, load = target
    db.docs.write("MEMORY.md", "base")
    db.docs.write("MEMORY.md", "edited on the target")  # revision 2
    time.sleep(0.01)
    source = open_db(tmp_path / "source.db")
    source.docs.write("MEMORY.md", "base")
    source.docs.write("MEMORY.md", "edited on the laptop, later")  # revision 2, later
    counts = load(db, _docs_records(source))
    assert counts.documents == 1
    doc = db.docs.read("MEMORY.md")
    assert doc.content == "edited on the laptop, later"
    assert doc.revision == 3  # the next one: the target's revision 2 keeps its number
    assert db.docs.read_revision("MEMORY.md", 2) == "edited on the target"
    assert db.docs.read_revision("MEMORY.md", 1) == "base"
    again = load(db, _docs_records(source))  # a second import adds nothing
    assert again.documents == 0 and db.docs.read("MEMORY.md").revision == 3
    assert [r.revision for r in db.docs.revisions("MEMORY.md")] == [2, 1]


def test_an_equal_revision_with_the_same_content_adds_no_revision(
    target: Any, open_db: Callable[..., sqlmem.MemoryDB], tmp_path: Path
) -> None:
    db, load = target
    db.docs.write("a.md", "same")
    time.sleep(0.01)
    source = open_db(tmp_path / "source.db")
    source.docs.write("a.md", "same", enabled=True)  # later updated_at, same content
    load(db, _docs_records(source))
    doc = db.docs.read("a.md")
    assert (doc.content, doc.revision, doc.enabled) == ("same", 1, True)
    assert db.docs.revisions("a.md") == []


def test_a_higher_revision_still_keeps_the_replaced_content(
    target: Any, open_db: Callable[..., sqlmem.MemoryDB], tmp_path: Path
) -> None:
    db, load = target
    db.docs.write("a.md", "target one")
    source = open_db(tmp_path / "source.db")
    for i in range(3):
        source.docs.write("a.md", f"source {i}")
    load(db, _docs_records(source))
    assert db.docs.read("a.md").revision == 3
    assert db.docs.read_revision("a.md", 1) == "target one"  # the target's, not the file's
    assert db.docs.read_revision("a.md", 2) == "source 1"
