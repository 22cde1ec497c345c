"""FTS5's BM25 in Python, for the backends that have no FTS5 (the in-memory twins).

Written once so that every such backend ranks as the SQLite store does: the stateful
agreement tests compare the twins' scores with `-bm25()` to 1e-9, so a second copy that
drifted (a different clamp, an avgdl over the filtered rows only) would show there first.
FTS5's definition (`fts5_aux.c`, `fts5Bm25Function`):

    idf(t)   = log((N - n_t + 0.5) / (n_t + 0.5)), or 1e-6 when that is <= 0
    score(d) = sum over query terms t of
               idf(t) * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl)))

with k1 = 1.2, b = 0.75, N the number of indexed rows, n_t the rows holding the term, tf
the number of places the term's tokens occur as a consecutive run in d (a query word of
several tokens is a phrase), |d| the token count of d and avgdl the mean over all rows.
N, n_t and avgdl count every indexed row, whatever filter the search applies: FTS5
computes them before the outer query sees a row.

numpy scores the whole (rows x terms) matrix at once; this is the one module of the
package that imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["K1", "MIN_IDF", "B", "occurrences", "scores", "weigh"]

K1 = 1.2
B = 0.75
#: FTS5 clamps a non-positive idf (a term in over half the rows) to this.
MIN_IDF = 1e-6


def occurrences(
    tokens: tuple[str, ...], phrase: tuple[str, ...], counts: Mapping[str, int] | None = None
) -> int:
    """How many places `phrase` starts in `tokens` (overlaps count, as in FTS5).

    `counts` (token -> occurrences in `tokens`), when the caller keeps one, answers a
    one-token phrase, and any phrase whose first token is absent, without a scan.
    """
    first = phrase[0]
    if counts is not None:
        hits = counts.get(first, 0)
        if len(phrase) == 1 or not hits:
            return hits
    size = len(phrase)
    return sum(
        1
        for i in range(len(tokens) - size + 1)
        if tokens[i] == first and tokens[i : i + size] == phrase
    )


def scores(
    freqs: Sequence[Sequence[int]],
    lengths: Sequence[int],
    *,
    every: bool = False,
    keep: Callable[[int], bool] | None = None,
) -> list[tuple[int, float]]:
    """BM25 of the matching rows: `(row index, score)` pairs in row order, unsorted.

    `freqs[i][j]` is the occurrences of term j in row i and `lengths[i]` row i's token
    count, for EVERY indexed row (they make N, n_t and avgdl). A row matches when it holds
    any term (`every`: all of them) and `keep(i)` accepts it (the caller's filters, which
    narrow the result but not the statistics). Higher is better, as `-bm25()` in SQL.
    """
    n_docs = len(lengths)
    if not n_docs or not freqs or not freqs[0]:
        return []
    tf = np.array(freqs, dtype=np.float64)
    present = tf > 0
    hits = present.all(axis=1) if every else present.any(axis=1)
    chosen = [int(i) for i in np.flatnonzero(hits)]
    if keep is not None:
        chosen = [i for i in chosen if keep(i)]
    if not chosen:
        return []
    dl = np.array(lengths, dtype=np.float64)
    total = weigh(tf[chosen], dl[chosen], present.sum(axis=0), n_docs, dl.sum() / n_docs)
    return list(zip(chosen, total, strict=True))


def weigh(
    tf: np.ndarray[Any, Any] | Sequence[Sequence[int]],
    lengths: np.ndarray[Any, Any] | Sequence[int],
    doc_freqs: np.ndarray[Any, Any] | Sequence[int],
    n_docs: int,
    avgdl: float,
) -> list[float]:
    """BM25 of the given rows (`tf[i][j]`: occurrences of term j in row i, `lengths[i]` its
    token count) when the statistics come from elsewhere: `doc_freqs[j]` rows of `n_docs`
    hold term j, `avgdl` the mean row length. `scores` counts them from every row; the
    PostgreSQL store keeps them in the database."""
    n_t = np.asarray(doc_freqs, dtype=np.float64)
    idf = np.log((n_docs - n_t + 0.5) / (n_t + 0.5))
    idf[idf <= 0] = MIN_IDF
    sub = np.asarray(tf, dtype=np.float64)
    dl = np.asarray(lengths, dtype=np.float64)
    den = sub + K1 * (1 - B + B * dl[:, None] / avgdl)
    total: list[float] = (idf * (sub * (K1 + 1) / den)).sum(axis=1).tolist()
    return total
