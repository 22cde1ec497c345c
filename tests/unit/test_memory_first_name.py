"""`sqlmem.inmemory` stays the in-memory database's name for code written before the
package became `sqlmem.inmemory`."""

from __future__ import annotations

import sqlmem
import sqlmem.inmemory
from sqlmem import Fact
from sqlmem.protocols import Database


def test_the_first_name_opens_the_same_database() -> None:
    assert sqlmem.inmemory.InMemoryDB is sqlmem.inmemory.InMemoryDB
    with sqlmem.inmemory.open() as db:
        assert isinstance(db, Database)
        db.facts.index(Fact(content="kept under both names"))
        assert [f.content for f in db.facts.search("kept")] == ["kept under both names"]


def test_both_names_are_attributes_after_a_bare_import() -> None:
    assert sqlmem.inmemory.open is sqlmem.inmemory.open
