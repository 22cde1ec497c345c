"""`sqlmem.memory` stays the in-memory database's name for code written before the
package became `sqlmem.inmemory`."""

from __future__ import annotations

import subprocess
import sys

import sqlmem
import sqlmem.inmemory
import sqlmem.memory
from sqlmem import Fact, Message
from sqlmem.protocols import Database


def test_the_first_name_opens_the_same_database() -> None:
    assert sqlmem.memory.InMemoryDB is sqlmem.inmemory.InMemoryDB
    with sqlmem.memory.open() as db:
        assert isinstance(db, sqlmem.inmemory.InMemoryDB)
        assert isinstance(db, Database)
        db.facts.index(Fact(content="kept under both names"))
        assert [f.content for f in db.facts.search("kept")] == ["kept under both names"]


def test_the_twin_stores_import_from_the_first_name() -> None:
    from sqlmem.memory import InMemoryDocumentStore, InMemoryFactStore, InMemoryHistoryStore

    assert InMemoryHistoryStore is sqlmem.InMemoryHistoryStore
    assert InMemoryFactStore is sqlmem.InMemoryFactStore
    assert InMemoryDocumentStore is sqlmem.InMemoryDocumentStore
    history = InMemoryHistoryStore()
    history.append("s", Message(role="user", content="hello"))
    assert history.count("s") == 1


def test_both_names_are_attributes_after_a_bare_import() -> None:
    code = "import sqlmem; print(sqlmem.memory.open is sqlmem.inmemory.open)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
