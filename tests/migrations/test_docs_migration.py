"""The documents migration on files made by an earlier release (looked up by name: its
number may change)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import sqlmem
from sqlmem.sqlite.core.migrations import latest_version, load_migrations


def _documents_version() -> int:
    (found,) = [m.version for m in load_migrations() if m.name.endswith("_documents")]
    return found


@pytest.mark.parametrize("tokenizer", ["trigram", "unicode61", sqlmem.StoreConfig().tokenizer])
def test_an_older_file_gets_documents_with_its_own_tokenizer(
    tmp_path: Path, tokenizer: str
) -> None:
    """A file made before the documents migration, with a non-default tokenizer, is
    upgraded by an open with the default config: its document index uses the file's
    tokenizer, which its queries are compiled for."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " sha256 TEXT NOT NULL, applied_at INTEGER NOT NULL)"
    )
    for migration in load_migrations()[: _documents_version() - 1]:
        conn.executescript(migration.sql.replace("{tokenizer}", tokenizer))
        conn.execute(
            "INSERT INTO schema_version VALUES (?, ?, ?, 0)",
            (migration.version, migration.name, migration.sha256),
        )
        conn.execute(f"PRAGMA user_version = {migration.version}")
    conn.commit()
    conn.close()
    with sqlmem.open(path) as db:
        assert db.stats()["schema_version"] == latest_version()
        db.docs.write("MEMORY.md", "The user runs marathons\n\n用户喜欢跑步")
        assert [h.start_line for h in db.docs.search("marathons")] == [1]
        if tokenizer != "trigram":  # segmented CJK is single characters: no trigrams
            assert [h.start_line for h in db.docs.search("跑步")] == [3]
        assert db.check().ok
        with db.engine.read() as read:
            (sql,) = read.execute(
                "SELECT sql FROM sqlite_schema WHERE name = 'document_blocks_fts'"
            ).fetchall()[0]
    assert f"tokenize = '{tokenizer}'" in sql
