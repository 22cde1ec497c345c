"""The first real upgrade (SPEC 3, 12): a 0.1 file (released migrations 0001-0002) opens
and is upgraded in place, every row kept, the memory-item fields at their defaults and
every fingerprint filled; the fill is idempotent and crash-safe; it works while another
process reads the file."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import textwrap
from datetime import timezone
from pathlib import Path

import pytest
from released import OldFact, build_0_1_file, released_migrations
from test_migrations import RELEASED

import sqlmem
from sqlmem.rules.encoding import dt_from_ms
from sqlmem.rules.identity import fingerprint
from sqlmem.sqlite.core.migrations import latest_version, load_migrations
from sqlmem.sqlite.stores import items as sqlite_items

OLD_FACTS = [
    OldFact("plain", "User likes tea."),
    OldFact(
        "full",
        "Deploys go through `make release`",
        source="chat:7",
        category="work/ops",
        tags=["ops", "deploy"],
        metadata={"big": 2**62, "nested": {"a": [1, None, "x"]}, "a.b": True},
        created_at=1_600_000_000_001,
        updated_at=1_600_000_000_999,
    ),
    OldFact("cjk", "我喜欢Python编程", tags=["语言"]),
    OldFact("emoji", "🦔 hedgehogs HIBERNATE  in winter.", category="animals"),
    OldFact("nul", "text with a NUL \x00 and\nnewline", tags=["x", "x"]),
    OldFact("dup-a", "Same text"),
    OldFact("dup-b", "same   TEXT.", created_at=1_500_000_000_000),
]


def _rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT pk, id, fingerprint FROM facts ORDER BY pk").fetchall()


def test_the_copies_are_the_released_files() -> None:
    got = {v: hashlib.sha256(data).hexdigest() for v, _, data in released_migrations()}
    assert got == RELEASED
    names = [m.name for m in load_migrations()[: len(RELEASED)]]
    assert [name for _, name, _ in released_migrations()] == names


def test_a_0_1_file_upgrades_keeping_every_row(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    build_0_1_file(path, OLD_FACTS, messages=5)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    with sqlmem.open(path) as db:
        assert db.stats()["schema_version"] == latest_version()
        assert db.facts.count() == len(OLD_FACTS)
        for old in OLD_FACTS:
            got = db.facts.get(old.id)
            assert got is not None, old.id
            assert (got.content, got.source, got.category) == (
                old.content,
                old.source,
                old.category,
            )
            assert (got.tags, got.metadata) == (old.tags, old.metadata)
            assert got.created_at == dt_from_ms(old.created_at)
            assert got.updated_at == dt_from_ms(old.updated_at)
            assert got.created_at.tzinfo is timezone.utc
            assert (got.layer, got.kind, got.confidence, got.salience) == (
                "semantic",
                "",
                1.0,
                0.5,
            )
            assert (got.references, got.expires_at, got.hits) == ([], None, 1)
            assert got.fingerprint == fingerprint(old.content)
        assert [m.content for m in db.history.get_all("chat:1")] == [
            f"message {i}" for i in range(1, 6)
        ]
        assert [f.id for f in db.facts.search("hibernating")] == ["emoji"]
        assert [f.id for f in db.facts.search("编程")] == ["cjk"]
        assert db.facts.tags() == {"deploy": 1, "ops": 1, "x": 1, "语言": 1}
        assert db.facts.categories() == ["animals", "work/ops"]
        # The fingerprints are there for remember: it merges into the oldest match.
        assert db.facts.remember(sqlmem.Fact(content="SAME TEXT")) == "dup-b"
        merged = db.facts.get("dup-b")
        assert merged is not None and merged.hits == 2
        assert db.check().ok, db.check().problems
    ledger = sqlite3.connect(path)
    try:
        names = [r[0] for r in ledger.execute("SELECT name FROM schema_version ORDER BY version")]
        assert names == [m.name for m in load_migrations()]
        assert ledger.execute("SELECT count(*) FROM facts WHERE fingerprint = ''").fetchone() == (
            0,
        )
    finally:
        ledger.close()


def test_fingerprints_are_filled_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_items, "FINGERPRINT_BATCH", 7)
    path = tmp_path / "memory.db"
    facts = [OldFact(f"f{i}", f"fact number {i} " + "word " * (i % 5)) for i in range(100)]
    build_0_1_file(path, facts)
    sqlmem.open(path).close()
    assert [fp for _, _, fp in _rows(path)] == [fingerprint(f.content) for f in facts]


def test_an_interrupted_fill_leaves_nothing_half_done_and_is_finished_on_reopen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fill is one transaction: a failure in the middle (here the 150th fingerprint,
    in the third batch) rolls all of it back; the next open fills everything."""
    monkeypatch.setattr(sqlite_items, "FINGERPRINT_BATCH", 64)
    path = tmp_path / "memory.db"
    facts = [OldFact(f"f{i}", f"fact {i}") for i in range(200)]
    build_0_1_file(path, facts)
    calls = 0

    def failing(text: str) -> str:
        nonlocal calls
        calls += 1
        if calls == 150:
            raise KeyboardInterrupt  # what a crash leaves: an exception mid-transaction
        return fingerprint(text)

    monkeypatch.setattr(sqlite_items, "fingerprint", failing)
    with pytest.raises(KeyboardInterrupt):
        sqlmem.open(path)
    assert {fp for _, _, fp in _rows(path)} == {""}  # nothing half done
    monkeypatch.setattr(sqlite_items, "fingerprint", fingerprint)
    with sqlmem.open(path) as db:
        assert db.facts.count() == 200
    assert [fp for _, _, fp in _rows(path)] == [fingerprint(f.content) for f in facts]
    before = path.read_bytes()
    sqlmem.open(path).close()  # nothing left to fill: nothing written
    assert _rows(path) == [(i + 1, f"f{i}", fingerprint(f"fact {i}")) for i in range(200)]
    assert len(path.read_bytes()) == len(before)


def test_rows_a_plain_client_inserts_get_a_fingerprint_on_open(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    sqlmem.open(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO facts(id, content, created_at, updated_at)"
            " VALUES ('p', 'Owls hunt.', 1, 1)"
        )
    conn.close()
    with sqlmem.open(path) as db:
        got = db.facts.get("p")
        assert got is not None and got.fingerprint == fingerprint("owls hunt")
        assert db.facts.remember(sqlmem.Fact(content="owls  hunt")) == "p"


_READER = textwrap.dedent(
    """
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN")
    first = conn.execute("SELECT count(*) FROM facts").fetchone()[0]
    print(first, flush=True)
    sys.stdin.readline()  # the upgrade runs meanwhile
    again = conn.execute("SELECT count(*), group_concat(id) FROM facts").fetchone()
    conn.execute("COMMIT")
    columns = [row[1] for row in conn.execute("PRAGMA table_info(facts)")]
    filled = conn.execute("SELECT count(*) FROM facts WHERE fingerprint <> ''").fetchone()[0]
    print(again[0], again[1], "fingerprint" in columns, filled, flush=True)
    """
)


def test_upgrade_while_another_process_reads_the_file(tmp_path: Path) -> None:
    """Another process holds a read transaction on the 0.1 file for the whole upgrade: the
    upgrade does not wait for it (WAL), the reader keeps its consistent snapshot, and
    sees the upgraded schema and the filled fingerprints once it starts a new one."""
    path = tmp_path / "memory.db"
    build_0_1_file(path, OLD_FACTS)
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None and reader.stdin is not None
        assert reader.stdout.readline().strip() == str(len(OLD_FACTS))
        with sqlmem.open(path, sqlmem.StoreConfig(busy_timeout_ms=2000)) as db:
            assert db.stats()["schema_version"] == latest_version()
            assert all(db.facts.get(f.id) is not None for f in OLD_FACTS)
        out, err = reader.communicate("go\n", timeout=60)
    finally:
        if reader.poll() is None:
            reader.kill()
    assert reader.returncode == 0, err
    count, ids, has_column, filled = out.split()
    assert int(count) == len(OLD_FACTS)
    assert sorted(ids.split(",")) == sorted(f.id for f in OLD_FACTS)
    assert has_column == "True" and int(filled) == len(OLD_FACTS)
    with sqlmem.open(path) as db:
        assert db.check().ok
