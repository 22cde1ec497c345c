"""W7: workspace documents (issue 16). A 20 KB MEMORY.md read and edited, against raw apsw
doing the same work on a plain table; the golemcore memory block with 8 days of notes.

- `docs.read` of a 20 KB document vs raw apsw reading the same row (the same
  columns, a plain tuple). Target p50 <= 2x.
- `docs.edit` of that document with 50 revisions kept (so every edit also prunes
  one) vs raw apsw doing read, replace, update, insert the revision and prune it, in one
  transaction, without full-text search. sqlmem's edit also re-indexes
  the block it changed. Target p50 <= 2x.
- `render_memory_context` with MEMORY.md and 8 days of daily notes. Target p50 under
  1 ms (the "raw" column holds that budget, 1000 µs).
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

import sqlmem

from .context import Context
from .harness import Row, latency_interleaved, percentile
from .raw import connect

__all__ = ["w7_documents"]

RAW_SCHEMA = """
CREATE TABLE documents (
    pk INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, enabled INTEGER NOT NULL,
    sort_order INTEGER NOT NULL, revision INTEGER NOT NULL, size INTEGER NOT NULL,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, content TEXT NOT NULL);
CREATE TABLE document_revisions (
    pk INTEGER PRIMARY KEY, document INTEGER NOT NULL, revision INTEGER NOT NULL,
    size INTEGER NOT NULL, updated_at INTEGER NOT NULL, content TEXT NOT NULL,
    UNIQUE (document, revision));
"""
RAW_READ = (
    "SELECT path, content, enabled, sort_order, revision, created_at, updated_at, size"
    " FROM documents WHERE path = ?"
)
RAW_SELECT = "SELECT pk, content, revision, size, updated_at FROM documents WHERE path = ?"
RAW_KEEP = (
    "INSERT INTO document_revisions (document, revision, size, updated_at, content)"
    " VALUES (?, ?, ?, ?, ?)"
)
RAW_PRUNE = "DELETE FROM document_revisions WHERE document = ? AND revision < ?"
RAW_UPDATE = "UPDATE documents SET content = ?, size = ?, revision = ?, updated_at = ? WHERE pk = ?"
PATH = "MEMORY.md"
KEEP = 50


def _document(seed: int) -> str:
    """~20 KB of Markdown: sections of bullet lines, blank lines between blocks."""
    rng = random.Random(seed)
    words = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "sa", "te", "vo") for b in "aeiou"]
    lines = ["# Memory", "", "marker0 is the edit target", ""]
    while sum(len(line) + 1 for line in lines) < 20_000:
        for _ in range(4):
            lines.append("- " + " ".join(rng.choice(words) for _ in range(12)))
        lines.append("")
    return "\n".join(lines)


def w7_documents(ctx: Context) -> list[Row]:
    calls = max(20, ctx.sizes.w2_calls)
    text = _document(77)
    base = ctx.folder("w7")
    db = sqlmem.open(base / "memory.db")
    raw = connect(base / "raw.db")
    with raw:
        raw.execute(RAW_SCHEMA)
        raw.execute(
            "INSERT INTO documents (path, enabled, sort_order, revision, size, created_at,"
            " updated_at, content) VALUES (?, 1, 3, 1, ?, 0, 0, ?)",
            (PATH, len(text), text),
        )
    db.docs.write(PATH, text)
    state = {"sqlmem": 0, "raw": 0}

    def sqlmem_edit(_: Any) -> int:
        n = state["sqlmem"]
        state["sqlmem"] = n + 1
        return db.docs.edit(PATH, f"marker{n} ", f"marker{n + 1} ")

    def raw_edit(_: Any) -> int:
        n = state["raw"]
        state["raw"] = n + 1
        with raw:  # one transaction (a savepoint); BEGIN IMMEDIATE costs the same alone
            pk, content, revision, size, updated = raw.execute(RAW_SELECT, (PATH,)).fetchall()[0]
            new = content.replace(f"marker{n} ", f"marker{n + 1} ")
            raw.execute(RAW_KEEP, (pk, revision, size, updated, content))
            raw.execute(RAW_PRUNE, (pk, revision + 1 - KEEP))
            raw.execute(RAW_UPDATE, (new, len(new.encode()), revision + 1, n, pk))
        return 1

    for _ in range(KEEP + 1):  # 50 revisions kept: from now on every edit prunes one
        sqlmem_edit(None)
        raw_edit(None)
    try:
        rows = _read_rows(db, raw, calls)
        samples = latency_interleaved({"raw": raw_edit, "sqlmem": sqlmem_edit}, range(calls))
        rows += _rows("W7 docs.edit, 20 KB, 50 revisions kept", samples, 2.0)
        assert len(db.docs.revisions(PATH)) == KEEP
        rows += _render_rows(ctx, db, calls)
    finally:
        db.close()
        raw.close()
    return rows


def _read_rows(db: sqlmem.MemoryDB, raw: Any, calls: int) -> list[Row]:
    for _ in range(50):
        db.docs.read(PATH)
        raw.execute(RAW_READ, (PATH,)).fetchall()
    samples = latency_interleaved(
        {
            "raw": lambda _: raw.execute(RAW_READ, (PATH,)).fetchall(),
            "sqlmem": lambda _: db.docs.read(PATH),
        },
        range(calls),
    )
    return _rows("W7 docs.read, 20 KB", samples, 2.0)


def _render_rows(ctx: Context, db: sqlmem.MemoryDB, calls: int) -> list[Row]:
    today = date(2026, 5, 10)
    for back in range(8):
        day = today - timedelta(days=back)
        for k in range(6):
            db.docs.append_daily(f"- note {k} of {day}: went running, then wrote code", day=day)
    samples = latency_interleaved(
        {"sqlmem": lambda _: db.docs.render_memory_context(today=today)}, range(calls)
    )["sqlmem"]
    p50, p99 = percentile(samples, 50), percentile(samples, 99)
    name = "W7 render_memory_context, 8 days of notes"
    return [
        Row(name, "p50 µs (raw = the 1 ms budget)", p50, 1000.0, p50 / 1000.0, "p50 < 1 ms", 1.0),
        Row(name, "p99 µs", p99, 1000.0, None),
    ]


def _rows(name: str, samples: dict[str, list[float]], limit: float) -> list[Row]:
    sq50, raw50 = percentile(samples["sqlmem"], 50), percentile(samples["raw"], 50)
    sq99, raw99 = percentile(samples["sqlmem"], 99), percentile(samples["raw"], 99)
    return [
        Row(name, "p50 µs", sq50, raw50, sq50 / raw50, f"p50 <= {limit:g}x raw", limit),
        Row(name, "p99 µs", sq99, raw99, sq99 / raw99),
    ]
