"""Memory items outside the stores' contract: the record's validation (SPEC 4, 12), export
and import of the new fields (an 0.1 export still imports), vacuum expiring first, and
LLMExtractor storing through remember."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem.context.extract import LLMExtractor
from sqlmem.errors import InvalidArgumentError, SqlmemError
from sqlmem.inmemory.facts import InMemoryFactStore
from sqlmem.records import Fact, Message
from sqlmem.rules.identity import fact_id, fingerprint
from sqlmem.sqlite.transfer.export import export_records
from sqlmem.sqlite.transfer.importer import import_records

FUTURE = datetime(2100, 1, 1, tzinfo=timezone.utc)
PAST = datetime(2001, 1, 1, tzinfo=timezone.utc)

# -- records -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("layer", "working"),
        ("layer", ""),
        ("layer", None),
        ("kind", "has space"),
        ("kind", "a/b"),
        ("kind", "é"),
        ("kind", "k" * 65),
        ("kind", 3),
        ("confidence", float("nan")),
        ("confidence", float("inf")),
        ("confidence", -0.01),
        ("confidence", 1.0000001),
        ("confidence", True),
        ("confidence", "0.5"),
        ("salience", float("nan")),
        ("salience", 2),
        ("salience", None),
        ("references", "doc"),
        ("references", ["r" * 513]),
        ("references", [1]),
        ("references", ("a",)),
        ("references", ["\ud800"]),
        ("expires_at", 1_700_000_000),
        ("expires_at", "1700000000"),
        ("expires_at", "not a date"),
        ("hits", 0),
        ("hits", "2"),
        ("fingerprint", 5),
    ],
)
def test_bad_item_fields_are_refused_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"Fact\.{field}"):
        Fact(content="x", **{field: value})


def test_good_item_fields_are_kept() -> None:
    fact = Fact(
        content="x",
        layer="episodic",
        kind="K-9_x" + "k" * 59,
        confidence=0,
        salience=1,
        references=["r" * 512, ""],
        expires_at="2100-01-01T00:00:00.123456+02:00",
        hits=3,
    )
    assert (fact.confidence, fact.salience) == (0.0, 1.0)
    assert isinstance(fact.confidence, float)
    assert fact.expires_at == datetime(2099, 12, 31, 22, 0, 0, 123000, tzinfo=timezone.utc)
    assert fact.hits == 3


def test_fingerprint_is_always_the_contents() -> None:
    fact = Fact(content="Ｕｓｅｒ likes   TEA.", fingerprint="forged")
    assert (
        fact.fingerprint
        == fingerprint("user likes tea")
        == Fact(content="user likes tea").fingerprint
    )
    assert len(fact.fingerprint) == 64 and int(fact.fingerprint, 16) >= 0
    assert fact_id("user likes tea") == "fact-" + fact.fingerprint[:32]


def test_model_validate_refuses_alike() -> None:
    with pytest.raises(InvalidArgumentError, match=r"Fact\.confidence"):
        Fact.model_validate({"content": "x", "confidence": 3})
    with pytest.raises(InvalidArgumentError, match=r"Fact\.layer"):
        Fact.model_validate_json('{"content": "x", "layer": "nope"}')


# -- export and import ---------------------------------------------------------------------


def test_export_and_import_keep_the_item_fields(tmp_path: Path) -> None:
    with sqlmem.open(tmp_path / "a.db") as db:
        db.facts.index(
            Fact(
                id="f",
                content="deploy with make",
                layer="procedural",
                kind="howto",
                confidence=0.5,
                salience=0.9,
                references=["doc:README"],
                expires_at=FUTURE,
            )
        )
        db.facts.remember(
            Fact(
                content="Deploy with make.",
                layer="procedural",
                confidence=0.5,
                expires_at=FUTURE - timedelta(days=1),
            )
        )
        db.facts.index(Fact(id="gone", content="old", expires_at=PAST))
        original = db.facts.get("f")
        records = list(export_records(db))
    assert original is not None and original.hits == 2
    facts = [r for r in records if r.get("type") == "fact"]
    assert [r["id"] for r in facts] == ["f"]  # expired facts are not exported
    assert facts[0]["expires_at"] == "2100-01-01T00:00:00.000+00:00"
    assert (facts[0]["hits"], facts[0]["layer"], facts[0]["references"]) == (
        2,
        "procedural",
        ["doc:README"],
    )
    json.dumps(records)  # plain JSON
    with sqlmem.open(tmp_path / "b.db") as db:
        counts = import_records(db, records)
        assert counts.facts == 1
        assert db.facts.get("f") == original
        assert import_records(db, records).facts == 0  # idempotent
        # A changed item field at the same updated_at is a different record: it wins.
        changed = [dict(r, salience=0.1) if r.get("type") == "fact" else r for r in records]
        assert import_records(db, changed).facts == 1
        got = db.facts.get("f")
        assert got is not None and (got.salience, got.hits) == (0.1, 2)


def test_an_0_1_export_imports_with_the_defaults(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [
        {"format": "sqlmem-export", "format_version": 1, "schema_version": 2},
        {
            "type": "fact",
            "id": "old",
            "content": "User likes tea.",
            "source": "",
            "tags": ["t"],
            "category": "",
            "metadata": {},
            "created_at": "2025-01-31T09:14:55.001+00:00",
            "updated_at": "2025-01-31T09:14:55.001+00:00",
        },
    ]
    with sqlmem.open(tmp_path / "m.db") as db:
        assert import_records(db, records).facts == 1
        got = db.facts.get("old")
    assert got is not None
    assert (got.layer, got.kind, got.confidence, got.salience) == ("semantic", "", 1.0, 0.5)
    assert (got.references, got.expires_at, got.hits) == ([], None, 1)
    assert got.fingerprint == fingerprint("user likes tea")


@pytest.mark.parametrize(
    ("field", "value"), [("hits", 0), ("layer", "x"), ("confidence", 2), ("expires_at", 5)]
)
def test_import_refuses_bad_item_fields_naming_the_line(
    tmp_path: Path, field: str, value: Any
) -> None:
    records = [
        {"format": "sqlmem-export", "format_version": 1},
        {"type": "fact", "id": "x", "content": "c", field: value},
    ]
    with sqlmem.open(tmp_path / "m.db") as db:
        with pytest.raises(SqlmemError, match=f"record 2: .*{field}"):
            import_records(db, records)
        assert db.facts.count() == 0


# -- vacuum --------------------------------------------------------------------------------


def test_vacuum_deletes_expired_facts_and_their_bytes(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with sqlmem.open(path) as db:
        db.facts.index(Fact(id="keep", content="kept words"))
        db.facts.index(Fact(id="gone", content="zanzibarsecret", expires_at=PAST))
        db.vacuum()
        assert db.facts.count() == 1
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT id FROM facts").fetchall() == [("keep",)]
    conn.close()
    assert b"zanzibarsecret" not in path.read_bytes()


# -- the extractor -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_extractor_stores_through_remember(tmp_path: Path, kind: str) -> None:
    db = sqlmem.open(tmp_path / "m.db") if kind == "sqlite" else None
    store = db.facts if db is not None else InMemoryFactStore()
    try:
        # Written by another writer under its own id: the extractor's copy merges into it.
        store.index(Fact(id="mine", content="The user lives in Lyon."))
        extractor = LLMExtractor(lambda prompt: "- the user lives in lyon\n- User has a cat")
        said = [Message(role="user", content="I live in Lyon and have a cat")]
        new = extractor.extract("chat:1", said, store)
        assert [f.content for f in new] == ["User has a cat"]
        assert store.count() == 2
        mine = store.get("mine")
        assert mine is not None and mine.hits == 2
        assert extractor.extract("chat:1", said, store) == []  # nothing new the second time
        cat = store.get(fact_id("User has a cat"))
        assert cat is not None and cat.source == "chat:1" and cat.hits == 1
    finally:
        if db is not None:
            db.close()


def test_remember_of_a_naive_expiry_is_utc(tmp_path: Path) -> None:
    with sqlmem.open(tmp_path / "m.db") as db:
        naive = datetime.now() + timedelta(days=1)
        db.facts.remember(Fact(id="n", content="x", expires_at=naive))
        got = db.facts.get("n")
        assert got is not None and got.expires_at == naive.replace(
            tzinfo=timezone.utc, microsecond=naive.microsecond // 1000 * 1000
        )


def test_cli_search_json_shows_the_item_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sqlmem.cli import main

    path = tmp_path / "m.db"
    with sqlmem.open(path) as db:
        db.facts.index(Fact(id="a", content="tea time", layer="episodic", expires_at=FUTURE))
    assert main(["search", str(path), "tea", "--json"]) == 0
    (hit,) = json.loads(capsys.readouterr().out)["results"]
    assert (hit["layer"], hit["hits"], hit["expires_at"]) == (
        "episodic",
        1,
        "2100-01-01T00:00:00.000+00:00",
    )
    assert hit["fingerprint"] == fingerprint("tea time")


def test_a_mutated_record_is_stored_with_its_new_contents_fingerprint(tmp_path: Path) -> None:
    with sqlmem.open(tmp_path / "m.db") as db:
        for store in (db.facts, InMemoryFactStore()):
            fact = Fact(id="m", content="first text")
            fact.content = "Second  TEXT."
            store.index(fact)
            got = store.get("m")
            assert got is not None and got.fingerprint == fingerprint("second text")


def test_the_fingerprint_cache_stays_bounded_and_exact() -> None:
    from sqlmem.rules import identity

    long_text = "word " * 2000  # past the cached length: computed every time
    assert fingerprint(long_text) == hashlib.sha256(b" ".join([b"word"] * 2000)).hexdigest()
    assert long_text not in identity._FINGERPRINTS
    for i in range(identity._FINGERPRINTS_MAX + 10):
        fingerprint(f"text {i}")
    assert len(identity._FINGERPRINTS) <= identity._FINGERPRINTS_MAX
    assert fingerprint("TEXT 5.") == hashlib.sha256(b"text 5").hexdigest()


def test_item_queries_use_their_indexes(tmp_path: Path) -> None:
    """remember's lookup is an index search by fingerprint prefix; expiry reads touch
    only expiring facts; item filters leave search driven by the FTS index."""
    from sqlmem.rules.filters import NO_FILTERS
    from sqlmem.sqlite.stores import facts_sql

    with sqlmem.open(tmp_path / "m.db") as db:
        db.facts.index_many(Fact(content=f"fact {i} common", layer="episodic") for i in range(300))
        params = {"now": 1, "fingerprint": "ab" * 32, "layer": "semantic", "query": '"common"'}
        params.update(limit=10, offset=0, layers='["semantic"]', kind="", min_confidence=0.5)
        with db.engine.read() as conn:

            def plan(sql: str) -> list[str]:
                return [str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]

            find = plan(facts_sql.REMEMBER_FIND)  # the few rows sharing the prefix, sorted
            assert find == [
                "SEARCH f USING INDEX facts_fingerprint (<expr>=?)",
                "USE TEMP B-TREE FOR ORDER BY",
            ]
            expired = plan(facts_sql.ANY_EXPIRED)
            assert expired == ["SEARCH facts USING COVERING INDEX facts_expires (expires_at<?)"]
            search = plan(facts_sql.search_sql(NO_FILTERS.key, (True, True, True)))
            assert search[0].startswith("SCAN facts_fts VIRTUAL TABLE"), search
            assert not any(line == "SCAN f" for line in search), search
            live = plan(facts_sql.search_live_sql(NO_FILTERS.key))
            assert live[0].startswith("SCAN facts_fts VIRTUAL TABLE"), live
