"""How long the first real upgrade takes: a 0.1 file of N facts (released migrations
0001-0002, kept verbatim in tests/migrations/released_0_1) opened by this sqlmem, which
applies 0003_memory_items and fills every fingerprint (sqlite/items.py).

    python -m benchmarks.upgrade_0_1 [N]     (default 100,000; prints seconds)

Not part of the runner's table (it measures one event, not a rate against raw SQL).
"""

from __future__ import annotations

import hashlib
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import sqlmem
from sqlmem.search.query import segment

from .data import Corpus

RELEASED = Path(__file__).resolve().parents[1] / "tests" / "migrations" / "released_0_1"


def build(path: Path, count: int) -> None:
    """A 0.1 file holding `count` corpus facts, written as 0.1's store wrote them."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " sha256 TEXT NOT NULL, applied_at INTEGER NOT NULL)"
    )
    for file in sorted(RELEASED.glob("*.sql")):
        data = file.read_bytes()
        version, digest = int(file.name[:4]), hashlib.sha256(data).hexdigest()
        conn.executescript(
            "BEGIN;\n"
            + data.decode().replace("{tokenizer}", sqlmem.StoreConfig().tokenizer)
            + f"\n;INSERT INTO schema_version VALUES ({version}, '{file.stem}', '{digest}', 0);"
            + f"\nPRAGMA user_version = {version};\nCOMMIT;"
        )
    rows = Corpus().facts(count, seed=5)
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO facts (id, content, category, tags, created_at, updated_at, search_text)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                f.id,
                f.content,
                f.category,
                f'["{f.tag}"]',
                1_700_000_000_000 + i,
                1,
                segment(f.content),
            )
            for i, f in enumerate(rows)
        ],
    )
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory.db"
        build(path, count)
        size = path.stat().st_size
        start = time.perf_counter()
        with sqlmem.open(path) as db:
            opened = time.perf_counter() - start
            assert db.facts.count() == count
        with sqlite3.connect(path) as conn:
            left = conn.execute("SELECT count(*) FROM facts WHERE fingerprint = ''").fetchone()
        assert left == (0,)
        start = time.perf_counter()
        sqlmem.open(path).close()
        again = time.perf_counter() - start
    print(
        f"upgrade of a 0.1 file of {count:,} facts ({size / 1e6:.0f} MB): {opened:.2f} s;"
        f" reopening it afterwards: {again * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
