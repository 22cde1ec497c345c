"""A 0.2 file holding facts and their vectors (with the content-hash index, the per-row
version triggers and the 16-digit fingerprint index) upgrades in place: every vector kept
and searchable, none to embed again, identical content still found stored, the kept
matrix of unfiltered searches still follows every change, and remember still finds a
repeated text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw
import pytest

import sqlmem
from sqlmem import Fact
from sqlmem.embedders import HashEmbedder
from sqlmem.rules.identity import fingerprint
from sqlmem.search.vectors import checked_rows, content_key, to_blob
from sqlmem.sqlite.core.migrations import _apply_one, latest_version, load_migrations
from sqlmem.sqlite.stores import vectors as sqlite_vectors

TEXTS = ["The user drinks green tea.", "The user lives in Paris.", "Owls hunt at night."]


class CountingEmbedder:
    def __init__(self) -> None:
        self.inner = HashEmbedder(32)
        self.model = self.inner.model
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def _unit(embedder: HashEmbedder, text: str) -> Any:
    """The unit vector sqlmem stores for `text`."""
    (row,) = checked_rows(embedder.embed([text]), 1)
    assert row is not None
    return row


def _build_0_2_file(path: Path) -> int:
    """Every migration before the lean vectors one, and facts with vectors written the
    way 0.2 wrote them; returns the file's version."""
    plan = load_migrations()
    ours = next(m for m in plan if m.name.endswith("lean_fact_writes"))
    before = tuple(m for m in plan if m.version < ours.version)
    embedder = HashEmbedder(32)
    conn = apsw.Connection(str(path))
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.pragma("foreign_keys", "ON")
        for migration in before:
            _apply_one(conn, path, migration, before, sqlmem.StoreConfig().tokenizer)
        with conn:
            for i, text in enumerate(TEXTS):
                conn.execute(
                    "INSERT INTO facts (id, content, created_at, updated_at, fingerprint)"
                    " VALUES (?, ?, 1600000000000, 1600000000000, ?)",
                    (f"old{i}", text, fingerprint(text)),
                )
                conn.execute(
                    "INSERT INTO fact_vectors(fact_pk, model, dim, content_hash, vector)"
                    " SELECT pk, ?, 32, ?, ? FROM facts WHERE id = ?",
                    (
                        embedder.model,
                        content_key(embedder.model, text),
                        to_blob(_unit(embedder, text)),
                        f"old{i}",
                    ),
                )
        changes = conn.execute("SELECT changes FROM fact_vectors_version").fetchall()[0][0]
        assert changes == len(TEXTS)  # 0.2's triggers counted each row
        return len(before)
    finally:
        conn.close()


def test_a_0_2_file_keeps_its_vectors_searchable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memory.db"
    old_version = _build_0_2_file(path)
    assert old_version < latest_version()
    monkeypatch.setattr(sqlite_vectors, "MATRIX_MIN_ROWS", 1)  # the kept matrix too
    embedder = CountingEmbedder()
    with sqlmem.open(path, embedder=embedder) as db:
        assert db.stats()["schema_version"] == latest_version()
        assert db.stats()["facts_without_vectors"] == 0
        assert db.facts.embed_pending() == 0
        assert embedder.texts == []
        for i, text in enumerate(TEXTS):
            best = db.facts.search(text, mode="vector", top_k=1)
            assert best[0].id == f"old{i}" and best[0].score == pytest.approx(1.0, abs=1e-6)
        embedder.texts.clear()  # (the queries were embedded)
        # identical content is found stored (no model call), a new text is embedded
        db.facts.index_many([Fact(id=f"new{i}", content=t) for i, t in enumerate(TEXTS)])
        db.facts.index_many([Fact(id=f"more{i}", content=f"a new text {i}") for i in range(5)])
        assert embedder.texts == [f"a new text {i}" for i in range(5)]
        top = db.facts.search("a new text 4", mode="vector", top_k=1)  # the matrix moved
        assert top[0].id == "more4"
        # remember's lookup goes through the rebuilt fingerprint index
        assert db.facts.remember(Fact(content="the user drinks GREEN tea")) == "old0"
        merged = db.facts.get("old0")
        assert merged is not None and merged.hits == 2
        assert db.check().ok
    conn = apsw.Connection(str(path))
    try:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema")}
        assert "fact_vectors_hash" not in names
        index_sql = conn.execute(
            "SELECT sql FROM sqlite_schema WHERE name = 'facts_fingerprint'"
        ).fetchall()[0][0]
        assert "substr(fingerprint, 1, 8)" in index_sql
        assert {"fact_vectors_insert", "fact_vectors_update", "fact_vectors_delete"} <= names
        assert conn.execute("SELECT batch_counted FROM fact_vectors_version").fetchall() == [(0,)]
    finally:
        conn.close()
