"""A 0.2 file (every migration before the facts-that-change one) upgrades in place: each
fact kept, in no chain, live, valid from its created_at; keys work on it afterwards."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import apsw

import sqlmem
from sqlmem import Fact
from sqlmem.sqlite.core.migrations import _apply_one, load_migrations


def _build_0_2_file(path: Path) -> None:
    plan = load_migrations()
    ours = next(m for m in plan if m.name.endswith("fact_validity"))
    before = tuple(m for m in plan if m.version < ours.version)
    conn = apsw.Connection(str(path))
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        for migration in before:
            _apply_one(conn, path, migration, before, sqlmem.StoreConfig().tokenizer)
        conn.execute(
            "INSERT INTO facts (id, content, source, category, tags, metadata, created_at,"
            " updated_at, layer, kind, confidence, salience, refs, fingerprint, hits)"
            " VALUES ('old', 'The user lives in Paris.', 's', 'home', '[\"city\"]', '{}',"
            " 1600000000000, 1600000000001, 'episodic', 'place', 0.5, 0.7, '[\"msg:s#1\"]',"
            " '', 3)"
        )
        assert conn.execute("PRAGMA user_version").fetchall()[0][0] == len(before)
    finally:
        conn.close()


def test_a_0_2_file_upgrades_keeping_every_fact(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    _build_0_2_file(path)
    with sqlmem.open(path) as db:
        got = db.facts.get("old")
        assert got is not None
        assert (got.content, got.layer, got.kind, got.hits) == (
            "The user lives in Paris.",
            "episodic",
            "place",
            3,
        )
        assert (got.key, got.valid_from, got.valid_to, got.superseded_by) == ("", None, None, None)
        assert got.created_at == datetime(2020, 9, 13, 12, 26, 40, tzinfo=timezone.utc)
        assert [f.id for f in db.facts.search("Paris")] == ["old"]
        assert db.facts.tags() == {"city": 1} and db.facts.count() == 1
        created = got.created_at
        assert created is not None
        assert db.facts.search("Paris", as_of=created - timedelta(seconds=1)) == []
        assert [f.id for f in db.facts.search("Paris", as_of=created)] == ["old"]
        # the old fact can join a chain
        new = db.facts.supersede("old", Fact(content="The user lives in Berlin."))
        assert [f.id for f in db.facts.history(id="old")] == ["old", new]
        assert [f.id for f in db.facts.search("lives")] == [new]
