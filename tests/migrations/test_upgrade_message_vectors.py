"""A file made before message vectors existed (0.2) upgrades in place with every row kept;
opened with an embedder, its messages count as missing vectors until `embed_pending` (or
`sqlmem embed`) fills them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from released import OldFact, build_0_1_file

import sqlmem
from sqlmem import Message
from sqlmem.embedders import HashEmbedder
from sqlmem.sqlite.core.migrations import latest_version, load_migrations


def _build_before_message_vectors(path: Path) -> int:
    """A file at the last schema version before message vectors, with two sessions."""
    plan = load_migrations()
    mine = next(m.version for m in plan if m.name.endswith("message_vectors"))
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " sha256 TEXT NOT NULL, applied_at INTEGER NOT NULL)"
    )
    for migration in plan[: mine - 1]:  # each in one transaction with its ledger row
        conn.executescript(
            "BEGIN IMMEDIATE;\n"
            + migration.sql.replace("{tokenizer}", sqlmem.StoreConfig().tokenizer)
            + f"\n;INSERT INTO schema_version VALUES ({migration.version}, '{migration.name}',"
            + f" '{migration.sha256}', 0);\nPRAGMA user_version = {migration.version};\nCOMMIT;"
        )
    for sid, texts in (("chat", ["green tea please", "", "blue sky"]), ("other", ["tea"])):
        conn.execute(
            "INSERT INTO sessions(session_id, last_seq, created_at, updated_at)"
            " VALUES (?, ?, 1, 1)",
            (sid, len(texts)),
        )
        for seq, text in enumerate(texts, start=1):
            calls = '[{"id": "1", "name": "f", "arguments": "{}"}]' if not text else "[]"
            conn.execute(
                "INSERT INTO messages(session, seq, role, content, tool_calls, created_at)"
                " VALUES ((SELECT pk FROM sessions WHERE session_id = ?), ?, 'user', ?, ?, ?)",
                (sid, seq, text, calls, 1_700_000_000_000 + seq),
            )
    conn.close()
    return mine - 1


def test_a_file_from_before_message_vectors_upgrades_keeping_every_row(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old_version = _build_before_message_vectors(path)
    assert old_version < latest_version()
    with sqlmem.open(path, embedder=HashEmbedder(32)) as db:
        stats = db.stats()
        assert stats["schema_version"] == latest_version()
        assert (stats["messages_active"], stats["messages_without_vectors"]) == (4, 3)
        assert [m.content for m in db.history.get_all("chat")] == [
            "green tea please",
            "",
            "blue sky",
        ]
        found = {(m.session_id, m.seq) for m in db.history.search("tea")}  # BM25 as before
        assert found == {("chat", 1), ("other", 1)}
        assert db.history.search("tea", mode="vector") == []  # nothing embedded yet
        assert db.history.embed_pending() == 3
        assert db.stats()["messages_without_vectors"] == 0
        top = db.history.search("green tea", mode="vector", top_k=1)
        assert [(m.session_id, m.seq) for m in top] == [("chat", 1)]
        assert db.history.append("chat", Message(role="user", content="next")) == 4
        assert db.check().ok


def test_a_0_1_file_upgrades_and_its_messages_get_vectors(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    build_0_1_file(path, [OldFact(id="f", content="kept fact")], messages=5)
    with sqlmem.open(path, embedder=HashEmbedder(32)) as db:
        assert db.stats()["messages_without_vectors"] == 5
        assert db.stats()["facts_without_vectors"] == 1
        assert db.history.embed_pending(batch_size=2) == 5
        assert db.facts.embed_pending() == 1
        assert [m.seq for m in db.history.search("message 3", mode="hybrid", top_k=1)] == [3]
        assert [m.content for m in db.history.get_all("chat:1")][-1] == "message 5"
