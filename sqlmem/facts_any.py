"""Mode "any" on large stores: near-exact OR ranking at a fraction of OR's cost.

Why: FTS5 scores every fact that holds any query word, so one common word ("the" is in
~45% of facts) means scoring tens of thousands of rows to keep ten. On 100,000 facts the
exact OR query costs ~8x an AND query at the median (~1.2 ms against ~0.15 ms).

What we do instead, only when it pays (`rows` below returns None otherwise, and the
caller runs the exact OR query):

* Exact whenever it is cheap: stores under `EXACT_BELOW` facts (the in-memory twin
  and the stateful agreement test live there), one-word queries, queries without a
  common word (all posting lists are short), and filtered searches (a filter may keep
  only facts the shortcut would miss).
* Words are split by document frequency: `rare` (in at most `RARE_SHARE` of the facts)
  and `common`. df is counted once per word and cached per store; a stale df only
  steers the split, it never changes a score.
* Rare and common words: `SEARCH_ANY_SPLIT` computes the exact OR score of every fact
  holding a rare word, touching the common words' posting lists only to seek. Facts
  holding only common words are left out: that is the approximation.
* Common words only: the AND query (a fact with every word has the same score as in
  OR, and usually outranks facts with fewer).
* When the shortcut finds fewer than `top_k` facts, the exact OR query runs instead.

Measured on the benchmark (W3, 100,000 facts, 1,000 queries; see benchmarks/README.md):
top-10 agreement with exact OR 0.984, p50 ~3.8x raw AND (0.44x the exact OR query)
instead of ~9x. The misses are facts made only of common words that outrank facts with
a rare word. The target (2x raw AND) is not met: the median mixed query still pays for
seeking the common words' posting lists and for scoring every fact with a rare word.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import apsw

from . import facts_sql as sql
from .query import Term, phrases

__all__ = ["EXACT_BELOW", "RARE_SHARE", "AnyShortcut", "fts_row_count"]

#: Below this many facts, "any" is always the exact OR query.
EXACT_BELOW = 20_000
#: A word in at most this share of the facts is rare.
RARE_SHARE = 0.01
#: The df cache starts over when the store has grown or shrunk by this share since.
_DRIFT = 0.1
_MAX_CACHED = 16_384


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """SQLite's varint, which FTS5 uses in its records."""
    value = 0
    for i in range(8):
        byte = data[pos + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, pos + i + 1
    return (value << 8) | data[pos + 8], pos + 9


def fts_row_count(conn: apsw.Connection) -> int:
    """Facts in the FTS index, read from FTS5's averages record (no scan)."""
    rows: list[Any] = conn.execute(sql.FTS_AVERAGES).fetchall()
    if not rows or not isinstance(rows[0][0], bytes) or not rows[0][0]:
        return 0
    try:
        return _varint(rows[0][0], 0)[0]
    except IndexError:  # a record we cannot read: behave as a small store (exact)
        return 0


class AnyShortcut:
    """Per-store state of the shortcut: the df cache. Thread-safe."""

    def __init__(self) -> None:
        self._df: dict[str, int] = {}
        self._df_rows = 0
        self._lock = threading.Lock()

    def rows(self, conn: apsw.Connection, terms: Sequence[Term], limit: int) -> list[Any] | None:
        """The result rows for a large store, or None: run the pinned exact OR query."""
        total = fts_row_count(conn) if terms else 0
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
            rows = _run(conn, sql.SEARCH_BM25, {"query": phrases(common, " AND "), "limit": limit})
        elif common:
            any_rare = phrases(rare, " OR ")
            both = f"({any_rare}) AND ({phrases(common, ' OR ')} OR {any_rare})"
            params = {"rare": any_rare, "both": both, "limit": limit}
            rows = _run(conn, sql.SEARCH_ANY_SPLIT, params)
        if len(rows) < limit:  # exact: no common word, or the shortcut found too few
            rows = _run(conn, sql.SEARCH_BM25, {"query": any_word, "limit": limit})
        return rows

    def _doc_freq(self, conn: apsw.Connection, phrase: str, total: int) -> int:
        with self._lock:
            if abs(total - self._df_rows) > _DRIFT * self._df_rows or len(self._df) > _MAX_CACHED:
                self._df.clear()
                self._df_rows = total
            df = self._df.get(phrase)
        if df is None:
            df = int(conn.execute(sql.PHRASE_DOCS, (f'"{phrase}"',)).fetchall()[0][0])  # type: ignore[arg-type]
            with self._lock:
                self._df[phrase] = df
        return df


def _run(conn: apsw.Connection, text: str, params: dict[str, Any]) -> list[Any]:
    return conn.execute(text, params).fetchall()
