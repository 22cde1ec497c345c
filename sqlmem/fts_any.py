"""Mode "any" on large FTS tables: near-exact OR ranking at a fraction of OR's cost.

Shared by the fact store (`search(mode="any")`) and the history store (`search`, which
has "any" semantics); each passes its own SQL (`AnyQueries`, built by `any_queries`).

Why: FTS5 scores every row that holds any query word, so one common word ("the" is in
~45% of rows) means scoring tens of thousands of rows to keep ten. On 100,000 facts the
exact OR query costs ~8x an AND query at the median (~1.2 ms against ~0.15 ms).

What we do instead, only when it pays (`AnyShortcut.rows` returns None otherwise, and the
caller runs its exact OR query):

* Exact whenever it is cheap: tables under `EXACT_BELOW` rows (the in-memory twins and
  the stateful agreement tests live there), one-word queries, queries without a common
  word (all posting lists are short), and filtered searches (the callers: a filter may
  keep only rows the shortcut would miss).
* Words are split by document frequency: `rare` (in at most `RARE_SHARE` of the rows)
  and `common`. df is counted once per word and cached per store; a stale df only
  steers the split, it never changes a score.
* Rare and common words: the split query computes the exact OR score of every row
  holding a rare word, touching the common words' posting lists only to seek. Rows
  holding only common words are left out: that is the approximation.
* Common words only: the AND query (a row with every word has the same score as in OR,
  and usually outranks rows with fewer).
* When the shortcut finds fewer than `top_k` rows, the exact OR query runs instead.

Measured on the benchmark (W3, 100,000 facts, 1,000 queries; see benchmarks/README.md):
top-10 agreement with exact OR 0.984, p50 ~3.8x raw AND (0.44x the exact OR query)
instead of ~9x. The misses are rows made only of common words that outrank rows with a
rare word. W5 measures the same on 100,000 messages.
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
RARE_SHARE = 0.01
#: The df cache starts over when the table has grown or shrunk by this share since.
_DRIFT = 0.1
_MAX_CACHED = 16_384


@dataclass(frozen=True)
class AnyQueries:
    """The SQL the shortcut runs on one FTS table; result rows end with the bm25 score."""

    averages: str  # FTS5's averages record (rowid 1 of the data table)
    phrase_docs: str  # rows holding one phrase (?)
    bm25: str  # the best :limit rows for :query, by bm25()
    split: str  # exact OR scores of the rows matching :rare, with :both (see any_queries)


def any_queries(fts: str, outer: str) -> AnyQueries:
    """The shortcut's SQL for FTS table `fts`.

    `outer` is the caller's SELECT of its result columns with `{ranked}` where the
    ranked subquery goes; the subquery yields `pk` and `score` (bm25, lower is better),
    at most :limit rows, best first.

    The ranking is bm25() sorted by SQLite rather than `ORDER BY rank` consumed by FTS5:
    FTS5's sorted mode prepares and runs an inner statement per query, which measured
    ~1.5x slower (AND and OR) on 100,000 facts.

    The split query gives exact OR scores of every row holding a rare word without
    scoring the long posting lists of the common words: `both` is `(R) AND (C OR R)`,
    which matches exactly the rows of `rare` (R), and its bm25 sums every phrase, the
    rare ones twice (they appear twice, same idf, same tf), so bm25(both) - bm25(R) is
    the bm25 of `R OR C`, the exact score.
    """
    bm25 = (
        f"SELECT rowid AS pk, bm25({fts}) AS score FROM {fts} WHERE {fts} MATCH :query"
        " ORDER BY score LIMIT :limit"
    )
    split = (
        f"WITH rare_hits AS MATERIALIZED (SELECT rowid AS pk, bm25({fts}) AS score"
        f" FROM {fts} WHERE {fts} MATCH :rare),"
        f" both_hits AS MATERIALIZED (SELECT rowid AS pk, bm25({fts}) AS score"
        f" FROM {fts} WHERE {fts} MATCH :both) "
        + outer.format(
            ranked="SELECT b.pk, b.score - r.score AS score FROM both_hits AS b"
            " JOIN rare_hits AS r ON r.pk = b.pk ORDER BY score LIMIT :limit"
        )
    )
    return AnyQueries(
        averages=f"SELECT block FROM {fts}_data WHERE id = 1",
        phrase_docs=f"SELECT count(*) FROM {fts} WHERE {fts} MATCH ?",
        bm25=outer.format(ranked=bm25),
        split=split,
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
        q = self.queries
        total = fts_row_count(conn, q) if terms else 0
        if total < EXACT_BELOW:
            return None
        any_word = phrases(terms, " OR ")
        rare: list[Term] = []
        common: list[Term] = []
        if len(terms) > 1:
            cutoff = total * RARE_SHARE
            for term in terms:
                df = self._doc_freq(conn, term.phrase, total)
                (rare if df <= cutoff else common).append(term)
        rows: list[Any] = []
        if common and not rare:
            rows = _run(conn, q.bm25, {"query": phrases(common, " AND "), "limit": limit})
        elif common:
            any_rare = phrases(rare, " OR ")
            both = f"({any_rare}) AND ({phrases(common, ' OR ')} OR {any_rare})"
            rows = _run(conn, q.split, {"rare": any_rare, "both": both, "limit": limit})
        if len(rows) < limit:  # exact: no common word, or the shortcut found too few
            rows = _run(conn, q.bm25, {"query": any_word, "limit": limit})
        return rows

    def _doc_freq(self, conn: apsw.Connection, phrase: str, total: int) -> int:
        with self._lock:
            if abs(total - self._df_rows) > _DRIFT * self._df_rows or len(self._df) > _MAX_CACHED:
                self._df.clear()
                self._df_rows = total
            df = self._df.get(phrase)
        if df is None:
            found: Any = conn.execute(self.queries.phrase_docs, (f'"{phrase}"',)).fetchall()
            df = int(found[0][0])
            with self._lock:
                self._df[phrase] = df
        return df


def _run(conn: apsw.Connection, text: str, params: dict[str, Any]) -> list[Any]:
    return conn.execute(text, params).fetchall()
