"""Every backend's document store is the one shared front over that backend's port, so a
rule written in the front (arguments, revisions, flags, records) holds on all of them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import sqlmem
from sqlmem.inmemory.docs import InMemoryDocumentPort
from sqlmem.postgres.docs import PostgresDocumentPort
from sqlmem.protocols import DocumentStore
from sqlmem.sqlite.stores.docs import SQLiteDocumentPort
from sqlmem.stores.documents import DocumentStoreFront
from sqlmem.stores.documents_port import DocumentPort

MakeDocs = Callable[..., DocumentStore]

_PORTS = {
    "sqlite": SQLiteDocumentPort,
    "memory": InMemoryDocumentPort,
    "postgres": PostgresDocumentPort,
}


def test_the_store_is_the_front_over_its_backends_port(
    make_docs: MakeDocs, request: pytest.FixtureRequest
) -> None:
    docs = make_docs()
    assert isinstance(docs, DocumentStoreFront)
    assert isinstance(docs, sqlmem.DocumentStore)
    port = docs.port
    assert isinstance(port, DocumentPort)  # every operation the front calls is there
    backend = request.node.callspec.params["make_docs"]
    assert type(port) is _PORTS[backend]
    # The store adds nothing of its own to the front but how it builds its port (and, in
    # memory, the hooks an `InMemoryDB` shares its lock and `atomic()` state through).
    own = set(vars(type(docs))) - {"__init__", "__doc__", "__module__", "__annotations__"}
    assert own <= {"_lock", "_snapshot", "_restore", "_port", "__static_attributes__"}


def test_each_database_builds_its_docs_on_the_front(tmp_path: object) -> None:
    with sqlmem.open(f"{tmp_path}/a.db") as db, sqlmem.open(":memory:") as twin:
        for store in (db.docs, twin.docs):
            assert isinstance(store, DocumentStoreFront)
            assert isinstance(store.port, DocumentPort)
