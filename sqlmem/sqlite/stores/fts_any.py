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
  rows) and `common`. dfs come from one scan of the table's vocabulary (an fts5vocab
  table in each reader connection's temp schema), kept per store and taken again when
  the table has grown or shrunk by `_DRIFT`. Counting a query's words one by one cost
  ~15 µs a word and was most of the shortcut's time (a query's rare words are mostly
  new to any per-word cache); the scan costs ~25-40 ms on 100,000 facts, once, and the
  map of the terms in two rows or more ~3.7 MB (32,000 terms). A stale df only steers
  the plan, it never changes a score.
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
queries of 1-3 words; see docs/guide/benchmark-details.md): top-10 agreement with exact OR 0.95,
p50 ~2.1-2.3x an AND query instead of ~8x (the exact OR). On 100,000 messages (W5,
longer texts, where the common words weigh more) the agreement is 0.88.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from ...search.query import MAX_QUERY_TERMS, Mode, Term, phrases, rarest_terms, tokens_of

__all__ = [
    "EXACT_BELOW",
    "EXPECTED_AND",
    "RARE_SHARE",
    "AnyQueries",
    "AnyShortcut",
    "any_queries",
    "capped_terms",
    "fts_row_count",
    "row_count_of",
    "varint",
    "vocabulary_table",
]

#: Below this many rows in the FTS table, "any" is always the exact OR query.
EXACT_BELOW = 20_000
#: A word in at most this share of the rows is rare.
RARE_SHARE = 0.001
#: The AND query runs when at least this many rows are expected to hold every word.
EXPECTED_AND = 1.0
#: The vocabulary is scanned again when the table has grown or shrunk by this share since.
_DRIFT = 0.1
#: Phrases of several tokens (runs of CJK characters) are counted one by one: at most
#: this many counts are kept.
_MAX_CACHED = 16_384


@dataclass(frozen=True)
class AnyQueries:
    """The SQL the shortcut runs on one FTS table; result rows end with the bm25 score."""

    averages: str  # FTS5's averages record (rowid 1 of the data table)
    vocabulary: str  # (term, df) of every term in more than one row
    phrase_docs: str  # rows holding one phrase (?)
    bm25: str  # the best :limit rows for :query, by bm25()
    token_docs: str  # (term, rows holding it) for the tokens of a JSON array (?)


def any_queries(fts: str, outer: str) -> AnyQueries:
    """The shortcut's SQL for FTS table `fts`.

    `outer` is the caller's SELECT of its result columns with `{ranked}` where the
    ranked subquery goes; the subquery yields `pk` and `score` (bm25, lower is better),
    at most :limit rows, best first. Result rows are whole (a row's columns identify
    it), so two result lists merge in Python.

    The ranking is bm25() sorted by SQLite rather than `ORDER BY rank` consumed by FTS5:
    FTS5's sorted mode prepares and runs an inner statement per query, which measured
    ~1.5x slower (AND and OR) on 100,000 facts. `LIMIT +:limit`: a bare bound LIMIT on a
    virtual table makes SQLite re-prepare the statement at every bind (see
    `facts_sql.search_sql`); the `+` saved ~7% of an unfiltered "any" search (20,000
    facts: 322 -> 300 µs).
    """
    bm25 = (
        f"SELECT rowid AS pk, bm25({fts}) AS score FROM {fts} WHERE {fts} MATCH :query"
        " ORDER BY score LIMIT +:limit"
    )
    return AnyQueries(
        averages=f"SELECT block FROM {fts}_data WHERE id = 1",
        vocabulary=f"SELECT term, doc FROM temp.{fts}_vocab WHERE doc > 1",
        phrase_docs=f"SELECT count(*) FROM {fts} WHERE {fts} MATCH ?",
        bm25=outer.format(ranked=bm25),
        token_docs=(
            f"SELECT term, doc FROM temp.{fts}_vocab WHERE term IN (SELECT value FROM json_each(?))"
        ),
    )


def vocabulary_table(fts: str) -> str:
    """The fts5vocab table a reader connection creates in its temp schema for FTS table
    `fts` (before it turns query_only): temp, so the file's schema stays the migrations'
    alone and other SQLite clients see nothing of it."""
    return f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{fts}_vocab USING fts5vocab(main, {fts}, row)"


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
    return row_count_of(rows[0][0] if rows else None)


def row_count_of(averages: object) -> int:
    """The row count an FTS5 averages record (`AnyQueries.averages`) starts with; 0 for
    none or one we cannot read (then the store behaves as a small one: exact)."""
    if not isinstance(averages, bytes) or not averages:
        return 0
    try:
        return varint(averages, 0)[0]
    except IndexError:
        return 0


class AnyShortcut:
    """Per-store state of the shortcut: its SQL, the vocabulary's dfs. Thread-safe."""

    def __init__(self, queries: AnyQueries) -> None:
        self.queries = queries
        self._vocabulary: dict[str, int] = {}  # token -> df, for tokens in 2+ rows
        self._vocabulary_rows = 0  # the table's rows when the vocabulary was scanned
        self._phrase_df: dict[str, int] = {}  # phrases of several tokens, counted
        self._lock = threading.Lock()  # the phrase counts
        self._scan_lock = threading.Lock()  # one vocabulary scan at a time

    def rows(
        self, conn: apsw.Connection, terms: Sequence[Term], limit: int, total: int | None = None
    ) -> list[Any] | None:
        """The result rows for a large table, or None: run the exact OR query. `total`:
        the index's row count when the caller read it already, in this snapshot."""
        if len(terms) < 2:  # one word: OR is AND, the plain query is already cheap
            return None
        q = self.queries
        if total is None:
            total = fts_row_count(conn, q)
        if total < EXACT_BELOW:
            return None
        cutoff = total * RARE_SHARE
        rare: list[Term] = []
        common: list[Term] = []
        expected = float(total)  # rows holding every word, were the words independent
        for term, df in zip(terms, self._doc_freqs(conn, terms, total), strict=True):
            expected *= df / total
            (rare if df <= cutoff else common).append(term)
        if not common:  # every posting list is short: exact OR is cheap
            return None
        every = {"query": phrases(terms, " AND "), "limit": limit}
        if not rare:
            rows = _run(conn, q.bm25, every)
        else:
            any_rare = _run(conn, q.bm25, {"query": phrases(rare, " OR "), "limit": limit})
            if expected >= EXPECTED_AND:
                rows = _merge(_run(conn, q.bm25, every), any_rare, limit)
            else:  # already the best `limit`, in order
                rows = any_rare
        return rows if len(rows) >= limit else None

    def doc_freqs(self, conn: apsw.Connection, terms: Sequence[Term], total: int) -> list[int]:
        """Each term's df as the plan sees it (see `_doc_freqs`; a word's may be stale by
        up to `_DRIFT` of the rows): history search within one session weighs common
        words with it (`history_search`)."""
        return self._doc_freqs(conn, terms, total)

    def _doc_freqs(self, conn: apsw.Connection, terms: Sequence[Term], total: int) -> list[int]:
        """Each term's df: a word's from the vocabulary (1 when it is in no more than one
        row, or new since the scan), a phrase of several tokens counted once and kept."""
        vocabulary = self._current_vocabulary(conn, total)
        dfs = []
        for term in terms:
            if len(term.tokens) == 1:
                dfs.append(vocabulary.get(term.tokens[0], 1))
                continue
            with self._lock:
                df = self._phrase_df.get(term.phrase)
            if df is None:
                found: Any = conn.execute(
                    self.queries.phrase_docs, (f'"{term.phrase}"',)
                ).fetchall()
                df = int(found[0][0])
                with self._lock:
                    if len(self._phrase_df) >= _MAX_CACHED:
                        self._phrase_df.clear()
                    self._phrase_df[term.phrase] = df
            dfs.append(df)
        return dfs

    def _current_vocabulary(self, conn: apsw.Connection, total: int) -> dict[str, int]:
        """The vocabulary's dfs, scanned again when the table has changed size by more
        than `_DRIFT` (every term's doclist is read: ~25-40 ms on 100,000 facts)."""
        if abs(total - self._vocabulary_rows) <= _DRIFT * self._vocabulary_rows:
            return self._vocabulary
        with self._scan_lock:  # a search that arrives meanwhile waits for this scan
            if abs(total - self._vocabulary_rows) > _DRIFT * self._vocabulary_rows:
                rows: Any = conn.execute(self.queries.vocabulary).fetchall()
                self._vocabulary = dict(rows)
                self._vocabulary_rows = total
                with self._lock:
                    self._phrase_df.clear()
        return self._vocabulary


def capped_terms(
    conn: apsw.Connection, queries: AnyQueries, terms: Sequence[Term], mode: Mode
) -> tuple[Term, ...]:
    """`terms` when they are at most `MAX_QUERY_TERMS`, else the rarest of them
    (`query.rarest_terms`), with exact row counts read in the search's own snapshot.

    One statement, only for long queries: the vocabulary is looked up per token (~15 µs
    each, so at most ~60 ms for the `MAX_QUERY_WORDS_READ` words a query can bring).
    """
    if len(terms) <= MAX_QUERY_TERMS:
        return tuple(terms)
    wanted = json.dumps(sorted(tokens_of(terms)), ensure_ascii=False)
    found: Any = conn.execute(queries.token_docs, (wanted,)).fetchall()
    return rarest_terms(terms, dict(found), mode)


def _run(conn: apsw.Connection, text: str, params: dict[str, Any]) -> list[Any]:
    return conn.execute(text, params).fetchall()


def _merge(full: list[Any], partial: list[Any], limit: int) -> list[Any]:
    """The best `limit` of two ranked result lists; a row in both keeps its `full` score
    (every word counted: never worse than its rare words' score)."""
    best: dict[tuple[Any, ...], Any] = {}
    for row in full + partial:
        best.setdefault(tuple(row[:-1]), row)
    return sorted(best.values(), key=lambda row: row[-1])[:limit]
