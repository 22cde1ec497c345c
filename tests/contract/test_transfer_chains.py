"""Export and import keep facts that change: keys, valid times and supersession links
(keyed chains and chains of facts without a key), from SQLite and PostgreSQL to either;
an export without them is format 2 (0.2 readers read it), with them format 3."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from targets import as_url

import sqlmem
from sqlmem import Fact
from sqlmem.postgres import transfer as pg_transfer
from sqlmem.sqlite.transfer import export as sqlite_export
from sqlmem.sqlite.transfer import importer as sqlite_import


def _day(n: int) -> datetime:
    return datetime(2024, 1, n, tzinfo=timezone.utc)


def _fill(db: Any) -> None:
    db.facts.remember(Fact(id="p", content="lives in Paris", key="user.city", valid_from=_day(1)))
    db.facts.remember(Fact(id="b", content="lives in Berlin", key="user.city", valid_from=_day(5)))
    db.facts.remember(Fact(id="v", content="is vegetarian"))
    db.facts.supersede("v", Fact(id="f", content="eats fish again", valid_from=_day(9)))
    db.facts.remember(Fact(id="x", content="plain fact"))


def _state(db: Any) -> Any:
    chains = [
        [(f.id, f.key, f.valid_from, f.valid_to, f.superseded_by) for f in db.facts.history(**q)]
        for q in ({"key": "user.city"}, {"id": "v"})
    ]
    live = sorted(f.id for f in db.facts.list(limit=50))
    return chains, live


Opener = Callable[[], Any]


@pytest.fixture(params=["sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    count = [0]

    def open_one() -> Any:
        count[0] += 1
        if request.param == "sqlite":
            return sqlmem.open(tmp_path / f"m{count[0]}.db")
        from pgserver import new_agent_id

        return sqlmem.open(as_url(request.getfixturevalue("pg_dsn")), agent_id=new_agent_id())

    return open_one


def _export(db: Any) -> list[dict[str, Any]]:
    module: Any = pg_transfer if type(db).__name__ == "PostgresDB" else sqlite_export
    return list(module.export_records(db))


def _import(db: Any, records: list[dict[str, Any]]) -> None:
    module: Any = pg_transfer if type(db).__name__ == "PostgresDB" else sqlite_import
    module.import_records(db, records)


def test_chains_survive_export_and_import(opener: Opener, tmp_path: Path) -> None:
    with opener() as source:
        _fill(source)
        expected = _state(source)
        records = _export(source)
    assert records[0]["format_version"] == 3
    keyed = [r for r in records if r.get("type") == "fact" and r.get("key")]
    assert {r["id"] for r in keyed} == {"p", "b"}
    plain = next(r for r in records if r.get("id") == "x")
    assert "key" not in plain  # a fact in no chain: the 0.2 record
    for target in (opener(), sqlmem.open(tmp_path / "other.db")):
        with target:
            _import(target, records)
            assert _state(target) == expected
            _import(target, records)  # twice: nothing changes
            assert _state(target) == expected


def test_an_export_without_chains_stays_format_2(opener: Opener) -> None:
    with opener() as db:
        db.facts.remember(Fact(content="plain"))
        assert _export(db)[0]["format_version"] == 2
