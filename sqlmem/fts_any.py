"""Mode "any" on large FTS tables: close to OR's ranking at close to AND's cost.

Shared by the fact store (`search(mode="any")`) and the history store (`search`, which
has "any" semantics); each passes its own SQL (`AnyQueries`, built by `any_queries`).

Why: FTS5 scores every row that holds any query word, so one common word ("the" is in
~45% of rows) means scoring tens of thousands of rows to keep ten. On 100,000 facts the
exact OR query costs ~7x an AND query at the median.

What we do instead, only when it pays (`AnyShortcut.rows` returns None otherwise, and the
caller runs its exact OR query):

* Exact whenever it is cheap: tables under `EXACT_BELOW` rows (the in-memory twins and
  the stateful agreement tests live there), one-word queries (OR is AND), queries
  without a common word (all posting lists are short), and filtered searches (the
  callers: a filter may keep only rows the shortcut would miss).
* Words are split by document frequency (df): `rare` (in at most `RARE_SHARE` of the
  rows) and `common`. df is counted once per word and cached per store; a stale df only
  steers the plan, it never changes a score.
* Rare and common words: the candidates are the best `top_k` rows of the OR of the rare
  words (scored on the rare words), plus, when at least `EXPECTED_AND` rows are expected
  to hold every word (df product, as if words were independent), the best `top_k` rows
  holding every word (the AND query; their score is the exact OR score). The common
  words' long posting lists are never scored.
* Common words only: the AND query (a row with every word has the same score as in OR,
  and usually outranks rows with fewer).
* When that finds fewer than `top_k` rows, the exact OR query runs instead.

What it gives up: rows made only of common words, and the common words' share of the
score of a row that holds some but not all of them (its score is then that of its rare
words, so it may rank a little low). Measured on the benchmark (W3, 100,000 facts, 1,000
queries of 1-3 words; see benchmarks/README.md): top-10 agreement with exact OR 0.95,
p50 ~1.7x an AND query instead of ~6x. On 100,000 messages (W5, longer texts, where the
common words weigh more) the agreement is 0.88.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from .query import Term, phrases

__all__ = [
    "EXACT_BELOW",
    "EXPECTED_AND",
    "RARE_SHARE",
    "AnyQueries",
    "AnyShortcut",
    "any_queries",
    "fts_row_count",
    "varint",
]

#: Below this many rows in the FTS table, "any" is always the exact OR query.
EXACT_BELOW = 20_000
#: A word in at most this share of the rows is rare.
RARE_SHARE = 0.001
#: The AND query runs when at least this many rows are expected to hold every word.
EXPECTED_AND = 1.0
#: The df cache starts over when the table has grown or shrunk by this share since.
_DRIFT = 0.1
_MAX_CACHED = 16_384


@dataclass(frozen=True)
class AnyQueries:
    """The SQL the shortcut runs on one FTS table; result rows end with the bm25 score."""

    averages: str  # FTS5's averages record (rowid 1 of the data table)
    phrase_docs: str  # rows holding one phrase (?)
    capped_docs: str  # rows matching a query (?1), counted up to ?2
    bm25: str  # the best :limit rows for :query, by bm25()


def any_queries(fts: str, outer: str) -> AnyQueries:
    """The shortcut's SQL for FTS table `fts`.

    `outer` is the caller's SELECT of its result columns with `{ranked}` where the
    ranked subquery goes; the subquery yields `pk` and `score` (bm25, lower is better),
    at most :limit rows, best first. Result rows are whole (a row's columns identify
    it), so two result lists merge in Python.

    The ranking is bm25() sorted by SQLite rather than `ORDER BY rank` consumed by FTS5:
    FTS5's sorted mode prepares and runs an inner statement per query, which measured
    ~1.5x slower (AND and OR) on 100,000 facts.
    """
    bm25 = (
        f"SELECT rowid AS pk, bm25({fts}) AS score FROM {fts} WHERE {fts} MATCH :query"
        " ORDER BY score LIMIT :limit"
    )
    return AnyQueries(
        averages=f"SELECT block FROM {fts}_data WHERE id = 1",
        phrase_docs=f"SELECT count(*) FROM {fts} WHERE {fts} MATCH ?",
        capped_docs=f"SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH ?1 LIMIT ?2)",
        bm25=outer.format(ranked=bm25),
    )


def varint(data: bytes, pos: int) -> tuple[int, int]:
    """SQLite's varint at `pos` (FTS5 uses it in its records): (value, next position)."""
    value = 0
    for i in range(8):
        byte = data[pos + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, pos + i + 1
    return (value << 8) | data[pos + 8], pos + 9


def fts_row_count(conn: apsw.Connection, queries: AnyQueries) -> int:
    """Rows in the FTS index, read from FTS5's averages record (no scan)."""
    rows: list[Any] = conn.execute(queries.averages).fetchall()
    if not rows or not isinstance(rows[0][0], bytes) or not rows[0][0]:
        return 0
    try:
        return varint(rows[0][0], 0)[0]
    except IndexError:  # a record we cannot read: behave as a small store (exact)
        return 0


class AnyShortcut:
    """Per-store state of the shortcut: its SQL and the df cache. Thread-safe."""

    def __init__(self, queries: AnyQueries) -> None:
        self.queries = queries
        self._df: dict[str, int] = {}
        self._df_rows = 0
        self._lock = threading.Lock()

    def rows(self, conn: apsw.Connection, terms: Sequence[Term], limit: int) -> list[Any] | None:
        """The result rows for a large table, or None: run the exact OR query."""
        if len(terms) < 2:  # one word: OR is AND, the plain query is already cheap
            return None
        q = self.queries
        total = fts_row_count(conn, q)
        if total < EXACT_BELOW:
            return None
        cutoff = total * RARE_SHARE
        rare: list[Term] = []
        common: list[Term] = []
        expected = float(total)  # rows holding every word, were the words independent
        for term, df in zip(terms, self._doc_freqs(conn, terms, total, cutoff), strict=True):
            expected *= df / total
            (rare if df <= cutoff else common).append(term)
        if not common:  # every posting list is short: exact OR is cheap
            return None
        every = {"query": phrases(terms, " AND "), "limit": limit}
        if not rare:
            rows = _run(conn, q.bm25, every)
        else:
            holding_all = _run(conn, q.bm25, every) if expected >= EXPECTED_AND else []
            any_rare = _run(conn, q.bm25, {"query": phrases(rare, " OR "), "limit": limit})
            rows = _merge(holding_all, any_rare, limit)
        return rows if len(rows) >= limit else None

    def _doc_freqs(
        self, conn: apsw.Connection, terms: Sequence[Term], total: int, cutoff: float
    ) -> list[int]:
        """Each term's df, from the cache or counted (and cached).

        Counting costs ~15 µs per word even for a rare one (an FTS5 cursor each), and a
        query's rare words are mostly new to the cache. So words not cached are first
        counted together: when the rows holding any of them are at most `cutoff`, each
        is rare and that count is cached as its df (an upper bound: it only makes the
        AND query run a little more often). Otherwise each is counted alone.
        """
        with self._lock:
            if abs(total - self._df_rows) > _DRIFT * self._df_rows or len(self._df) > _MAX_CACHED:
                self._df.clear()
                self._df_rows = total
            dfs = [self._df.get(term.phrase) for term in terms]
        unknown = [term for term, df in zip(terms, dfs, strict=True) if df is None]
        counted = self._count(conn, unknown, cutoff) if unknown else {}
        return [counted[t.phrase] if df is None else df for t, df in zip(terms, dfs, strict=True)]

    def _count(self, conn: apsw.Connection, unknown: list[Term], cutoff: float) -> dict[str, int]:
        counted: dict[str, int] = {}
        if len(unknown) > 1:
            cap = int(cutoff) + 1
            found: Any = conn.execute(
                self.queries.capped_docs, (phrases(unknown, " OR "), cap)
            ).fetchall()
            if int(found[0][0]) < cap:
                counted = dict.fromkeys((term.phrase for term in unknown), int(found[0][0]))
        for term in unknown:
            if term.phrase not in counted:
                found = conn.execute(self.queries.phrase_docs, (f'"{term.phrase}"',)).fetchall()
                counted[term.phrase] = int(found[0][0])
        with self._lock:
            self._df.update(counted)
        return counted


def _run(conn: apsw.Connection, text: str, params: dict[str, Any]) -> list[Any]:
    return conn.execute(text, params).fetchall()


def _merge(full: list[Any], partial: list[Any], limit: int) -> list[Any]:
    """The best `limit` of two ranked result lists; a row in both keeps its `full` score
    (every word counted: never worse than its rare words' score)."""
    best: dict[tuple[Any, ...], Any] = {}
    for row in full + partial:
        best.setdefault(tuple(row[:-1]), row)
    return sorted(best.values(), key=lambda row: row[-1])[:limit]
