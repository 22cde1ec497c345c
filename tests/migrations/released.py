"""Files made by the released 0.1 schema (migrations 0001-0002), for upgrade tests.

The released migration files are kept verbatim in `released_0_1/` (their sha256 are the
ones `test_migrations.RELEASED` pins, checked by `test_the_copies_are_the_released_files`):
today's `migrations/` may change their successors, never them, and these tests must keep
building exactly what 0.1 users hold. Rows are written with the statements the 0.1 store
used, through a plain `sqlite3` connection, as 0.1's engine left the file: WAL mode, the
ledger, `user_version` 2.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlmem
from sqlmem.search.query import segment

__all__ = ["RELEASED_DIR", "OldFact", "build_0_1_file", "released_migrations"]

RELEASED_DIR = Path(__file__).parent / "released_0_1"


@dataclass
class OldFact:
    """A fact as 0.1 stored it."""

    id: str
    content: str
    source: str = ""
    category: str = ""
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: int = 1_700_000_000_000
    updated_at: int = 1_700_000_000_500


def released_migrations() -> list[tuple[int, str, bytes]]:
    """(version, name, file bytes) of every released 0.1 migration."""
    out = []
    for path in sorted(RELEASED_DIR.glob("*.sql")):
        out.append((int(path.name[:4]), path.stem, path.read_bytes()))
    return out


_INSERT_FACT = (
    "INSERT INTO facts (id, content, source, category, tags, metadata, created_at,"
    " updated_at, search_text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def build_0_1_file(path: Path, facts: list[OldFact], *, messages: int = 3) -> None:
    """A 0.1 memory.db holding `facts` and a session of `messages` messages."""
    tokenizer = sqlmem.StoreConfig().tokenizer
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " sha256 TEXT NOT NULL, applied_at INTEGER NOT NULL)"
        )
        for version, name, data in released_migrations():
            # One transaction per migration with its ledger row, as 0.1 applied them
            # (name and digest are a slug and hex: safe as literals).
            digest = hashlib.sha256(data).hexdigest()
            conn.executescript(
                "BEGIN IMMEDIATE;\n"
                + data.decode().replace("{tokenizer}", tokenizer)
                + f"\n;INSERT INTO schema_version VALUES ({version}, '{name}', '{digest}', 0);"
                + f"\nPRAGMA user_version = {version};\nCOMMIT;"
            )
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            _INSERT_FACT,
            [
                (
                    f.id,
                    f.content,
                    f.source,
                    f.category,
                    json.dumps(f.tags, ensure_ascii=False, separators=(",", ":")),
                    json.dumps(f.metadata, ensure_ascii=False, separators=(",", ":")),
                    f.created_at,
                    f.updated_at,
                    segment(f.content),
                )
                for f in facts
            ],
        )
        conn.execute(
            "INSERT INTO sessions (session_id, last_seq, created_at, updated_at)"
            " VALUES ('chat:1', ?, 1, 1)",
            (messages,),
        )
        conn.executemany(
            "INSERT INTO messages (session, seq, role, content, created_at)"
            " VALUES (1, ?, 'user', ?, ?)",
            [(i, f"message {i}", 1000 + i) for i in range(1, messages + 1)],
        )
        conn.execute("COMMIT")
    finally:
        conn.close()
