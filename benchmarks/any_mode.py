"""Prototype: recall-oriented ("any") fact search that stays close to AND's speed.

Why OR is slow: FTS5 scores every row that matches any word, so one common word ("the"
is in ~45% of our facts) means scoring tens of thousands of rows to keep ten.

The idea ("split"), exact by construction for the usual query:

1. Split the query's words by document frequency: `rare` (df <= cutoff * N) and
   `common`. df comes from an fts5vocab table in the temp schema (no migration) and is
   cached per token: counting a common word's documents walks its whole posting list
   (~0.8 ms for "the" at 100,000 facts), and df only steers the split, so a stale value
   can cost speed but never correctness.
2. Run two cheap queries, each with every phrase at most once:
   Q1 = `r1 OR r2 ...` (top k) and Q2 = `(r1 OR r2 ...) AND (c1 OR c2 ...)` (top k).
   FTS5's bm25 sums per-phrase terms whose idf depends on the phrase alone, so a row's Q2
   score equals its exact OR score, and a row of Q1 that has no common word also has its
   exact OR score. Merging both by score gives the exact OR top k among rows that hold at
   least one rare word (a row with a common word missing from Q2's top k is beaten by k
   rows there, so it cannot belong to the top k).
3. Rows with only common words are missing. They score at most
   sum(idf(c) * (k1 + 1)) over the common words; when the k-th merged score beats that
   bound the answer is exact, otherwise we fall back to the plain OR query.
4. A query of common words only runs as AND (every word present; bm25 identical to OR for
   those rows) and falls back to OR when that finds fewer than k rows. This is the one
   approximate case.

`RescoreAny` is the cheaper, approximate sibling (MaxScore-like): one OR query over the
rare words fetches the best M candidates (with their text); the common words' bm25 terms
are then added in Python (tf and length from the same tokenizer, idf from the cached df,
average length from FTS5's averages record) and the candidates re-sorted. No query ever
scores the long posting lists of common words; it misses rows outside the M candidates and
rows with common words only.

Works on a plain apsw connection to any file with sqlmem's (or the raw side's) facts and
facts_fts tables.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

import apsw

from sqlmem.sqlite.stores.fts_any import varint as _varint

__all__ = ["AndThenOr", "PrunedOr", "RescoreAny", "SplitAny", "agreement", "averages"]

_WORD = re.compile(r"[^\W_]+")
K1, B = 1.2, 0.75  # FTS5's bm25 constants

SEARCH = """
SELECT f.id, s.rank
FROM (SELECT rowid, rank FROM facts_fts WHERE facts_fts MATCH ? ORDER BY rank LIMIT ?) s
JOIN facts f ON f.pk = s.rowid
ORDER BY s.rank
"""
SEARCH_TEXT = """
SELECT f.id, s.rank, f.content
FROM (SELECT rowid, rank FROM facts_fts WHERE facts_fts MATCH ? ORDER BY rank LIMIT ?) s
JOIN facts f ON f.pk = s.rowid
ORDER BY s.rank
"""
VOCAB = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.facts_vocab USING fts5vocab(main, facts_fts, 'row')"
)
DOC_FREQ = "SELECT doc FROM temp.facts_vocab WHERE term = ?"
AVERAGES = "SELECT block FROM facts_fts_data WHERE id = 1"


def averages(conn: apsw.Connection) -> tuple[int, float]:
    """(rows, average tokens per row) from FTS5's averages record: ~10 µs, no scan."""
    block = conn.execute(AVERAGES).get
    if not block:
        return 0, 0.0
    rows, pos = _varint(block, 0)
    tokens, _ = _varint(block, pos)
    return rows, (tokens / rows if rows else 0.0)


def _phrase(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


class _Base:
    def __init__(self, conn: apsw.Connection, k: int = 10) -> None:
        self.conn = conn
        self.k = k
        self._tok = conn.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
        self.stats: dict[str, int] = {}

    def tokens(self, query: str) -> list[str]:
        out: list[str] = []
        for word in _WORD.findall(query):
            for tok in self._tok(word.encode(), apsw.FTS5_TOKENIZE_QUERY, None,
                                 include_offsets=False):  # fmt: skip
                t = tok if isinstance(tok, str) else tok[0]
                if t not in out:
                    out.append(t)
        return out

    def run(self, expr: str) -> list[tuple[str, float]]:
        return self.conn.execute(SEARCH, (expr, self.k)).fetchall()

    def count(self, what: str) -> None:
        self.stats[what] = self.stats.get(what, 0) + 1


class AndThenOr(_Base):
    """AND top k; when it finds fewer than k rows, the plain OR query."""

    def search(self, query: str) -> list[str]:
        toks = self.tokens(query)
        if not toks:
            return []
        rows = self.run(" AND ".join(map(_phrase, toks)))
        if len(rows) < self.k and len(toks) > 1:
            self.count("or_fallback")
            rows = self.run(" OR ".join(map(_phrase, toks)))
        return [r[0] for r in rows]


class SplitAny(_Base):
    """The split described in the module docstring; `PrunedOr` is its step 2 without Q2."""

    def __init__(self, conn: apsw.Connection, k: int = 10, cutoff: float = 0.02) -> None:
        super().__init__(conn, k)
        self.cutoff = cutoff
        conn.execute(VOCAB)
        self.df: dict[str, int] = {}
        self.n_rows, _ = averages(conn)

    def doc_freq(self, token: str) -> int:
        df = self.df.get(token)
        if df is None:
            df = self.df[token] = int(self.conn.execute(DOC_FREQ, (token,)).get or 0)
        return df

    def idf(self, df: int) -> float:
        n = self.n_rows
        return max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6)

    def split(self, toks: list[str]) -> tuple[list[str], list[str]]:
        limit = self.cutoff * self.n_rows
        rare, common = [], []
        for t in toks:
            (rare if self.doc_freq(t) <= limit else common).append(t)
        return rare, common

    def search(self, query: str) -> list[str]:
        return [r[0] for r in self.search_scored(query)]

    def search_scored(self, query: str) -> list[tuple[str, float]]:
        toks = self.tokens(query)
        if not toks:
            return []
        if len(toks) == 1:
            return self.run(_phrase(toks[0]))
        rare, common = self.split(toks)
        any_rare = " OR ".join(map(_phrase, rare))
        if not common:
            self.count("rare_only")
            return self.run(any_rare)
        if not rare:
            self.count("common_only")
            rows = self.run(" AND ".join(map(_phrase, common)))
            if len(rows) < self.k:
                self.count("or_fallback")
                rows = self.run(" OR ".join(map(_phrase, toks)))
            return rows
        self.count("split")
        best = dict(self.run(any_rare))
        best.update(self.run(f"({any_rare}) AND ({' OR '.join(map(_phrase, common))})"))
        rows = sorted(best.items(), key=lambda r: r[1])[: self.k]
        bound = sum(self.idf(self.doc_freq(c)) for c in common) * (K1 + 1)
        if len(rows) < self.k or -rows[-1][1] < bound:
            self.count("or_fallback")
            return self.run(" OR ".join(map(_phrase, toks)))
        return rows


class PrunedOr(SplitAny):
    """OR over the rare words only (common words dropped): fast, but not exact."""

    def search_scored(self, query: str) -> list[tuple[str, float]]:
        toks = self.tokens(query)
        if not toks:
            return []
        rare, common = self.split(toks)
        if not rare:
            rare = [min(common, key=self.doc_freq)]
        return self.run(" OR ".join(map(_phrase, rare)))


class RescoreAny(SplitAny):
    """OR over rare words for M candidates, common words' bm25 added in Python."""

    def __init__(
        self, conn: apsw.Connection, k: int = 10, cutoff: float = 0.01, m: int = 50
    ) -> None:
        super().__init__(conn, k, cutoff)
        self.m = m
        self.n_rows, self.avgdl = averages(conn)

    def search_scored(self, query: str) -> list[tuple[str, float]]:
        toks = self.tokens(query)
        if not toks:
            return []
        if len(toks) == 1:
            return self.run(_phrase(toks[0]))
        rare, common = self.split(toks)
        if not rare:
            self.count("common_only")
            rows = self.run(" AND ".join(map(_phrase, common)))
            if len(rows) < self.k:
                self.count("or_fallback")
                rows = self.run(" OR ".join(map(_phrase, toks)))
            return rows
        expr = " OR ".join(map(_phrase, rare))
        found = self.conn.execute(SEARCH_TEXT, (expr, self.m)).fetchall()
        if not common:
            self.count("rare_only")
            return [(fid, rank) for fid, rank, _ in found[: self.k]]
        self.count("rescored")
        idf = {t: self.idf(self.doc_freq(t)) for t in common}
        scored = []
        for fid, rank, content in found:
            doc = [t if isinstance(t, str) else t[0]
                   for t in self._tok(content.encode(), apsw.FTS5_TOKENIZE_DOCUMENT, None,
                                      include_offsets=False)]  # fmt: skip
            norm = K1 * (1 - B + B * len(doc) / self.avgdl)
            tf = Counter(doc)
            bonus = sum(w * tf[t] * (K1 + 1) / (tf[t] + norm) for t, w in idf.items() if tf[t])
            scored.append((fid, rank - bonus))
        scored.sort(key=lambda r: r[1])
        return scored[: self.k]


def agreement(found: list[Any], exact: list[Any], k: int = 10) -> float:
    """Share of the exact top k (ids) that `found` returns; 1.0 when nothing matches."""
    want = set(exact[:k])
    if not want:
        return 1.0 if not found else 0.0
    return len(want.intersection(found[:k])) / len(want)
