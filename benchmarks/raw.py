"""The physical limit: the same work as plain apsw SQL, no library layer.

A raw database is a plain `apsw.Connection` with WAL and synchronous NORMAL (the pragmas
are listed in `PRAGMAS` and printed in the results header), a minimal table with the
same index shape as sqlmem's where it matters (UNIQUE(session, seq) for history; FTS5
external-content tables kept in sync by triggers, with sqlmem's default tokenizer; a
`fact_tags` table for tag filters), and the obvious SQL an expert would write. Results
are plain tuples: no records are built.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import apsw

__all__ = [
    "FTS_PAGE_SIZE",
    "PRAGMAS",
    "TOKENIZER",
    "RawFacts",
    "RawHistory",
    "RawMetaFacts",
    "connect",
    "match_expr",
    "sqlite_utils_recent",
    "stable_plans",
]

TOKENIZER = "porter unicode61 remove_diacritics 2"

#: FTS5 leaf pages of 2,000 bytes, as sqlmem's migration 0002 sets: a storage setting,
#: not library work, so the physical limit gets it too. It makes AND queries much faster
#: on an index built in batches (W3 "all": raw AND p50 ~124 -> ~79 µs, 100,000 facts).
FTS_PAGE_SIZE = 2000

PRAGMAS = {"journal_mode": "wal", "synchronous": "NORMAL", "busy_timeout_ms": 5000, "qpsg": 1}

_WORD = re.compile(r"[^\W_]+")


def connect(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.set_busy_timeout(PRAGMAS["busy_timeout_ms"])
    conn.pragma("journal_mode", "wal")
    conn.pragma("synchronous", "NORMAL")
    stable_plans(conn)
    return conn


def stable_plans(conn: apsw.Connection) -> None:
    """The query planner stability guarantee, as sqlmem's connections have it: without
    it SQLite compiles a statement again whenever a bound value its plan looked at is
    bound (a LIMIT, FTS5's own per-word lookup), a connection setting, not library work,
    so the physical limit gets it too (raw AND at 10,000 facts: ~84 -> ~42 µs)."""
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, 1)


def match_expr(query: str, joiner: str) -> str | None:
    """Each word quoted (user text is never FTS syntax), joined with AND or OR."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    if not words:
        return None
    return f" {joiner} ".join(f'"{w}"' for w in words)


# -- history ------------------------------------------------------------------------------

HISTORY_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    pk           INTEGER PRIMARY KEY,
    session_id   TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    role         TEXT    NOT NULL,
    content      TEXT    NOT NULL,
    name         TEXT    NOT NULL DEFAULT '',
    tool_call_id TEXT    NOT NULL DEFAULT '',
    tool_calls   TEXT    NOT NULL DEFAULT '[]',
    is_error     INTEGER NOT NULL DEFAULT 0,
    metadata     TEXT    NOT NULL DEFAULT '{}',
    created_at   INTEGER NOT NULL,
    UNIQUE (session_id, seq)
);
"""

HISTORY_FTS = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    content, content = 'messages', content_rowid = 'pk', tokenize = '{TOKENIZER}'
);
INSERT INTO messages_fts(messages_fts, rank) VALUES ('pgsz', {FTS_PAGE_SIZE});
CREATE TRIGGER IF NOT EXISTS messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.pk, new.content);
END;
"""

APPEND = """
INSERT INTO messages(session_id, seq, role, content, created_at)
SELECT ?1, coalesce(max(seq), 0) + 1, ?2, ?3, ?4 FROM messages WHERE session_id = ?1
RETURNING seq
"""
NEXT_SEQ = "SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = ?"
_ROW = "(?,?,?,?,?)"
INSERT_HEAD = "INSERT INTO messages(session_id, seq, role, content, created_at) VALUES "

# Every field a message has (as sqlmem returns them), not just role and content.
RECENT = """
SELECT seq, role, content, name, tool_call_id, tool_calls, is_error, metadata, created_at
FROM messages
WHERE session_id = ? ORDER BY seq DESC LIMIT ?
"""

# Ranked by bm25() in SQLite's sorter, not FTS5's `ORDER BY rank`: measured ~1.5x faster
# for ORed words and ~1.1x for ANDed words (p50, 100,000 rows), since FTS5's sorted mode
# prepares and runs an inner statement per query. sqlmem uses the same shape; the raw
# side must stay the fastest honest way to do the work.
SEARCH_MESSAGES = """
SELECT m.session_id, m.seq, m.role, m.content, m.created_at, f.score
FROM (SELECT rowid, bm25(messages_fts) AS score FROM messages_fts WHERE messages_fts MATCH ?
      ORDER BY score LIMIT ?) f
JOIN messages m ON m.pk = f.rowid
ORDER BY f.score
"""


class RawHistory:
    """Messages in one table; seq = max(seq) + 1 in the same statement."""

    def __init__(self, path: Path, *, fts: bool) -> None:
        self.conn = connect(path)
        self.conn.execute(HISTORY_SCHEMA + (HISTORY_FTS if fts else ""))
        self._insert_sql: dict[int, str] = {}

    def append(self, session_id: str, role: str, content: str, now: int) -> int:
        return int(self.conn.execute(APPEND, (session_id, role, content, now)).get)

    def append_many(self, session_id: str, rows: Sequence[tuple[str, str]], now: int) -> list[int]:
        conn = self.conn
        n = len(rows)
        sql = self._insert_sql.get(n)
        if sql is None:
            sql = self._insert_sql[n] = INSERT_HEAD + ",".join([_ROW] * n)
        with conn:  # one transaction (apsw: SAVEPOINT/BEGIN ... COMMIT)
            first = conn.execute(NEXT_SEQ, (session_id,)).get + 1
            values: list[Any] = []
            for i, (role, content) in enumerate(rows):
                values += (session_id, first + i, role, content, now)
            conn.execute(sql, values)
        return list(range(first, first + n))

    def get_recent(self, session_id: str, n: int) -> list[tuple[Any, ...]]:
        rows = self.conn.execute(RECENT, (session_id, n)).fetchall()
        rows.reverse()
        return rows

    def search(self, query: str, top_k: int = 10, joiner: str = "OR") -> list[tuple[Any, ...]]:
        expr = match_expr(query, joiner)
        if expr is None:
            return []
        return self.conn.execute(SEARCH_MESSAGES, (expr, top_k)).fetchall()

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM messages").get)

    def close(self) -> None:
        self.conn.close()


# -- a peer: sqlite-utils (optional) -------------------------------------------------------


def sqlite_utils_recent(path: Path) -> Callable[[str, int], list[dict[str, Any]]] | None:
    """`get_recent(session, n)` the way a sqlite-utils user writes it: `rows_where` over a
    RawHistory file, newest n by seq, oldest first, every column (dicts). None when
    sqlite-utils is not installed."""
    try:
        import sqlite_utils
    except ImportError:
        return None
    table = sqlite_utils.Database(str(path))["messages"]

    def recent(session_id: str, n: int) -> list[dict[str, Any]]:
        rows = list(table.rows_where("session_id = ?", [session_id], order_by="seq desc", limit=n))
        rows.reverse()
        return rows

    return recent


# -- facts ----------------------------------------------------------------------------------

FACTS_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS facts (
    pk         INTEGER PRIMARY KEY,
    id         TEXT    NOT NULL UNIQUE,
    content    TEXT    NOT NULL,
    category   TEXT    NOT NULL DEFAULT '',
    tags       TEXT    NOT NULL DEFAULT '[]',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS facts_category ON facts(category);
CREATE TABLE IF NOT EXISTS fact_tags (
    tag     TEXT    NOT NULL,
    fact_pk INTEGER NOT NULL,
    PRIMARY KEY (tag, fact_pk)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS facts_fts USING fts5(
    content, content = 'facts', content_rowid = 'pk', tokenize = '{TOKENIZER}'
);
INSERT INTO facts_fts(facts_fts, rank) VALUES ('pgsz', {FTS_PAGE_SIZE});
CREATE TRIGGER IF NOT EXISTS facts_ai AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts(rowid, content) VALUES (new.pk, new.content);
    INSERT OR IGNORE INTO fact_tags(tag, fact_pk) SELECT value, new.pk FROM json_each(new.tags);
END;
CREATE TRIGGER IF NOT EXISTS facts_ad AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts(facts_fts, rowid, content) VALUES ('delete', old.pk, old.content);
    DELETE FROM fact_tags WHERE fact_pk = old.pk;
END;
CREATE TRIGGER IF NOT EXISTS facts_au AFTER UPDATE OF content ON facts BEGIN
    INSERT INTO facts_fts(facts_fts, rowid, content) VALUES ('delete', old.pk, old.content);
    INSERT INTO facts_fts(rowid, content) VALUES (new.pk, new.content);
END;
CREATE TRIGGER IF NOT EXISTS facts_au_tags AFTER UPDATE OF tags ON facts
WHEN old.tags IS NOT new.tags BEGIN
    DELETE FROM fact_tags WHERE fact_pk = old.pk;
    INSERT OR IGNORE INTO fact_tags(tag, fact_pk) SELECT value, new.pk FROM json_each(new.tags);
END;
"""

_UPSERT_HEAD = "INSERT INTO facts(id, content, category, tags, created_at, updated_at) VALUES "
_UPSERT_TAIL = """
ON CONFLICT(id) DO UPDATE SET content = excluded.content, category = excluded.category,
    tags = excluded.tags, updated_at = excluded.updated_at
"""
UPSERT_ONE = _UPSERT_HEAD + "(?,?,?,?,?,?)" + _UPSERT_TAIL

_COLUMNS = "f.id, f.content, f.category, f.tags, f.created_at, f.updated_at"

# bm25() in SQLite's sorter, as SEARCH_MESSAGES (and sqlmem) do.
SEARCH = f"""
SELECT {_COLUMNS}, s.score
FROM (SELECT rowid, bm25(facts_fts) AS score FROM facts_fts WHERE facts_fts MATCH ?
      ORDER BY score LIMIT ?) s
JOIN facts f ON f.pk = s.rowid
ORDER BY s.score
"""

# Filters join the FTS matches before LIMIT, so the result is the best top_k that pass.
SEARCH_TAG = f"""
SELECT {_COLUMNS}, fts.rank
FROM facts_fts fts
CROSS JOIN fact_tags t ON t.tag = ? AND t.fact_pk = fts.rowid
CROSS JOIN facts f ON f.pk = fts.rowid
WHERE facts_fts MATCH ?
ORDER BY fts.rank LIMIT ?
"""

SEARCH_CATEGORY = f"""
SELECT {_COLUMNS}, fts.rank
FROM facts_fts fts CROSS JOIN facts f ON f.pk = fts.rowid
WHERE facts_fts MATCH ? AND f.category = ?
ORDER BY fts.rank LIMIT ?
"""


class RawFacts:
    """Facts with FTS5 and a tag table; upserts are `INSERT ... ON CONFLICT DO UPDATE`."""

    def __init__(self, path: Path) -> None:
        self.conn = connect(path)
        self.conn.execute(FACTS_SCHEMA)
        self._batch_sql: dict[int, str] = {}

    def index(self, row: tuple[Any, ...]) -> None:
        """row: (id, content, category, tags_json, created_at, updated_at)."""
        self.conn.execute(UPSERT_ONE, row)

    def index_many(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """One multi-row upsert in one transaction (FTS5 flushes per statement)."""
        n = len(rows)
        sql = self._batch_sql.get(n)
        if sql is None:
            sql = self._batch_sql[n] = _UPSERT_HEAD + ",".join(["(?,?,?,?,?,?)"] * n) + _UPSERT_TAIL
        values: list[Any] = []
        for row in rows:
            values += row
        with self.conn:
            self.conn.execute(sql, values)

    def search(self, query: str, top_k: int = 10, joiner: str = "AND") -> list[tuple[Any, ...]]:
        expr = match_expr(query, joiner)
        if expr is None:
            return []
        return self.conn.execute(SEARCH, (expr, top_k)).fetchall()

    def search_tag(self, query: str, tag: str, top_k: int = 10) -> list[tuple[Any, ...]]:
        expr = match_expr(query, "AND")
        if expr is None:
            return []
        return self.conn.execute(SEARCH_TAG, (tag, expr, top_k)).fetchall()

    def search_category(self, query: str, category: str, top_k: int = 10) -> list[tuple[Any, ...]]:
        expr = match_expr(query, "AND")
        if expr is None:
            return []
        return self.conn.execute(SEARCH_CATEGORY, (expr, category, top_k)).fetchall()

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM facts").get)

    def close(self) -> None:
        self.conn.close()


# -- facts with metadata (W3m) ------------------------------------------------------------

# The same filters as W3m's operator expressions, as an expert writes them by hand: a JSON
# path per key, with the type test the operators imply (numbers with numbers, text with
# text), joined after the FTS match like SEARCH_TAG / SEARCH_CATEGORY.
SEARCH_TAG_PRIORITY = f"""
SELECT {_COLUMNS}, f.metadata, fts.rank
FROM facts_fts fts
CROSS JOIN fact_tags t ON t.tag = ? AND t.fact_pk = fts.rowid
CROSS JOIN facts f ON f.pk = fts.rowid
WHERE facts_fts MATCH ?
  AND json_type(f.metadata, '$.priority') IN ('integer', 'real')
  AND json_extract(f.metadata, '$.priority') >= ?
ORDER BY fts.rank LIMIT ?
"""

SEARCH_CATEGORY_LANG = f"""
SELECT {_COLUMNS}, f.metadata, fts.rank
FROM facts_fts fts CROSS JOIN facts f ON f.pk = fts.rowid
WHERE facts_fts MATCH ? AND f.category = ?
  AND json_type(f.metadata, '$.lang') = 'text'
  AND json_extract(f.metadata, '$.lang') IN (SELECT value FROM json_each(?))
ORDER BY fts.rank LIMIT ?
"""


class RawMetaFacts(RawFacts):
    """RawFacts plus a JSON metadata column; rows end with the metadata text."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.conn.execute("ALTER TABLE facts ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'")

    def index_many(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """rows: (id, content, category, tags_json, created_at, updated_at, metadata)."""
        head = "INSERT INTO facts(id, content, category, tags, created_at, updated_at, metadata)"
        sql = head + " VALUES " + ",".join(["(?,?,?,?,?,?,?)"] * len(rows))
        values: list[Any] = []
        for row in rows:
            values += row
        with self.conn:
            self.conn.execute(sql, values)

    def search_tag_priority(self, query: str, tag: str, least: int, top_k: int = 10) -> list[Any]:
        expr = match_expr(query, "AND")
        if expr is None:
            return []
        return self.conn.execute(SEARCH_TAG_PRIORITY, (tag, expr, least, top_k)).fetchall()

    def search_category_lang(
        self, query: str, category: str, langs_json: str, top_k: int = 10
    ) -> list[Any]:
        expr = match_expr(query, "AND")
        if expr is None:
            return []
        return self.conn.execute(
            SEARCH_CATEGORY_LANG, (expr, category, langs_json, top_k)
        ).fetchall()
