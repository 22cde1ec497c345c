"""The history store and the import are one front over a per-backend port: every
backend's `db.history` is the `HistoryStoreFront` over a port that satisfies `HistoryPort`,
every backend's import goes through `ImportPort`, and the import's merge rule is the same
on each (a record that says nothing new writes nothing, whatever the backend)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from targets import as_url

import sqlmem
from sqlmem import Fact, Message
from sqlmem.postgres import transfer as pg_transfer
from sqlmem.protocols import HistoryStore
from sqlmem.sqlite.transfer import export as sqlite_export
from sqlmem.sqlite.transfer import importer as sqlite_import
from sqlmem.stores.history import HistoryStoreFront
from sqlmem.stores.history_port import HistoryPort
from sqlmem.stores.transfer_port import ExportPort, ImportPort

Opener = Callable[[], Any]


def _opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    opened: list[Any] = []

    def open_one() -> Any:
        if request.param == "sqlite":
            db = sqlmem.open(tmp_path / f"m{len(opened)}.db")
        elif request.param == "memory":
            db = sqlmem.open(":memory:")
        else:
            from pgserver import new_agent_id

            url = as_url(request.getfixturevalue("pg_dsn"))
            db = sqlmem.open(url, agent_id=new_agent_id())
        opened.append(db)
        return db

    yield open_one
    for db in opened:
        db.close()


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    yield from _opener(request, tmp_path)


@pytest.fixture(params=["sqlite", "postgres"])
def file_opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """The backends with export and import (the in-memory database has neither)."""
    yield from _opener(request, tmp_path)


def _is_postgres(db: Any) -> bool:
    return type(db).__name__ == "PostgresDB"


def test_history_is_the_front_over_a_port(opener: Opener) -> None:
    db = opener()
    assert isinstance(db.history, HistoryStoreFront)
    assert isinstance(db.history, HistoryStore)
    assert isinstance(db.history.port, HistoryPort)
    # The front answers through the port: what one writes, the other reads.
    db.history.append("s", Message(role="user", content="hello there"))
    assert [m.content for m in db.history.port.all("s", False)] == ["hello there"]
    assert db.history.port.label in repr(db.history)


def _port_of(db: Any) -> Any:
    if _is_postgres(db):
        return pg_transfer.PostgresImportPort(db)
    return sqlite_import.SQLiteImportPort(db)


def _export(db: Any) -> list[dict[str, Any]]:
    module: Any = pg_transfer if _is_postgres(db) else sqlite_export
    return list(module.export_records(db))


def _import(db: Any, records: list[dict[str, Any]]) -> Any:
    module: Any = pg_transfer if _is_postgres(db) else sqlite_import
    return module.import_records(db, records)


def test_transfer_ports_satisfy_the_ports(file_opener: Opener) -> None:
    db = file_opener()
    port = _port_of(db)
    assert isinstance(port, ImportPort)
    assert port.database is db
    source = (
        pg_transfer.PostgresExportPort if _is_postgres(db) else sqlite_export.SQLiteExportPort
    )(db)
    assert isinstance(source, ExportPort)
    assert source.header()[1] is False and source.has_message_vectors() is False


def test_a_record_without_valid_time_imported_twice_writes_once(file_opener: Opener) -> None:
    """A fact record without `valid_from` (every 0.2 export's, and a 0.3 export's fact in
    no chain), imported twice: the second import writes nothing."""
    source = file_opener()
    source.facts.index(Fact(id="x", content="plain fact", tags=["t"]))
    records = _export(source)
    fact = next(r for r in records if r.get("type") == "fact")
    assert "valid_from" not in fact  # a fact in no chain: the 0.2 record
    target = file_opener()
    first = _import(target, records)
    again = _import(target, records)
    assert (first.facts, first.facts_skipped) == (1, 0)
    assert (again.facts, again.facts_skipped) == (0, 1)


def test_a_record_that_leaves_the_valid_time_out_changes_nothing(file_opener: Opener) -> None:
    """Regression: on PostgreSQL a record without `valid_from` was compared with the stored
    fact's valid time, so a record equal to the stored fact in everything it says was
    written again and counted imported (the write kept the stored valid time: nothing
    changed); SQLite compared the valid time only when the record gives one, as the merge
    rule now does on every backend."""
    source = file_opener()
    day = datetime(2024, 1, 5, tzinfo=timezone.utc)
    source.facts.index(Fact(id="x", content="moved to Berlin", valid_from=day))
    records = _export(source)
    target = file_opener()
    assert _import(target, records).facts == 1
    fact = next(r for r in records if r.get("type") == "fact")
    assert fact["valid_from"]
    silent = {k: v for k, v in fact.items() if k != "valid_from"}
    counts = _import(target, [records[0], silent])
    assert (counts.facts, counts.facts_skipped) == (0, 1)
    stored = target.facts.get("x")
    assert stored is not None and stored.valid_from == day
