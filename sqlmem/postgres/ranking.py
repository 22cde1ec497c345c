"""Search on PostgreSQL with the SQLite store's words and FTS5's BM25.

Documents are tokenized by sqlmem (`QueryCompiler.tokens`, after `segment`), exactly as the
SQLite store's FTS5 tokenizer and the in-memory twin tokenize them, and stored as a tsvector
built from those tokens (never through a PostgreSQL text search configuration, whose
`simple` config finds nothing in CJK text and whose stemmers differ from FTS5's porter). A
query term becomes a lexeme, or a phrase (`<->`) for a run of CJK characters.

Ranking is BM25 as FTS5 computes it (`sqlmem.search.bm25.weigh`): ts_rank has no IDF. One
statement reads, among the rows holding any query term (all of the agent's rows, filters
not applied: the statistics count every row), each row's length, the positions of the
query's lexemes, and whether the filters keep it; `corpus_stats` gives N and the mean
length. Term frequencies and document frequencies (a phrase's too) come from those
positions, so the scores equal the twin's.

Limits of tsvector, documented rather than hidden: a lexeme keeps at most 256 positions
and positions stop at 16,383, so a word repeated more than 255 times in one row, or a
phrase past the 16,383rd token, scores as if it were not there beyond those bounds; a
lexeme is cut to 500 characters (PostgreSQL refuses 2 KB), in documents and queries alike.
A tsvector holds at most 1 MB of lexemes and positions: a text of more distinct words than
fit (roughly 60,000 or more) is still stored whole, and found by the words of its first
megabyte of index (`_MAX_INDEX_BYTES`); its length still counts every token. Refusing the
write instead would lose a large tool output that SQLite keeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..search.bm25 import K1, MIN_IDF, B, weigh
from ..search.query import Term

__all__ = [
    "MAX_LEXEME",
    "best",
    "bm25_statement",
    "lexemes",
    "single_lexemes",
    "tsquery",
    "tsvector",
]

MAX_LEXEME = 500
_MAX_POSITION = 16383
_MAX_POSITIONS = 256
#: PostgreSQL's limit is 1,048,575 bytes of lexemes and positions; a margin below it.
_MAX_INDEX_BYTES = 1_000_000


def _lexeme(token: str) -> str:
    return token[:MAX_LEXEME]


def _quoted(token: str) -> str:
    return "'" + _lexeme(token).replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector(tokens: Sequence[str]) -> str:
    """The tsvector text of a document's tokens (positions count from 1)."""
    places: dict[str, list[int]] = {}
    size = 0  # an upper bound of the bytes PostgreSQL will need (`_MAX_INDEX_BYTES`)
    for i, token in enumerate(tokens, 1):
        lexeme = _lexeme(token)
        got = places.get(lexeme)
        if got is None:
            size += len(lexeme.encode()) + 5  # alignment, position count, first position
            if size > _MAX_INDEX_BYTES:
                break
            places[lexeme] = [min(i, _MAX_POSITION)]
        elif len(got) < _MAX_POSITIONS:
            size += 2
            if size > _MAX_INDEX_BYTES:
                break
            got.append(min(i, _MAX_POSITION))
    return " ".join(
        f"{_quoted(tok)}:{','.join(map(str, dict.fromkeys(pos)))}" for tok, pos in places.items()
    )


def tsquery(terms: Sequence[Term], joiner: str) -> str:
    """A tsquery matching rows holding any (`" | "`) or every (`" & "`) term."""
    parts = []
    for term in terms:
        phrase = " <-> ".join(_quoted(t) for t in term.tokens)
        parts.append(f"({phrase})" if len(term.tokens) > 1 else phrase)
    return joiner.join(parts)


def lexemes(terms: Iterable[Term]) -> list[str]:
    return sorted({_lexeme(t) for term in terms for t in term.tokens})


def _tf(term: Term, positions: Mapping[str, Sequence[int]]) -> int:
    first = positions.get(_lexeme(term.tokens[0]))
    if not first:
        return 0
    if len(term.tokens) == 1:
        return len(first)
    rest = [set(positions.get(_lexeme(t), ())) for t in term.tokens[1:]]
    return sum(1 for p in first if all(p + i in s for i, s in enumerate(rest, 1)))


def best(
    rows: Sequence[Sequence[Any]],
    terms: Sequence[Term],
    n_docs: int,
    n_tokens: int,
    every: bool,
    limit: int,
) -> list[tuple[Any, float]]:
    """The best `limit` (key, score) of `rows`, best first; ties by key.

    A row is (key, length, {lexeme: positions} or None, kept by the filters). Rows whose
    positions miss a phrase (its tokens apart) count for no document frequency.
    """
    if not rows or not terms or n_docs <= 0:  # no term left (rarest_terms): no match
        return []
    freqs = [[_tf(t, row[2] or {}) for t in terms] for row in rows]
    doc_freqs = [sum(1 for f in freqs if f[j]) for j in range(len(terms))]
    chosen = [
        i
        for i, (row, f) in enumerate(zip(rows, freqs, strict=True))
        if row[3] and (all(f) if every else any(f))
    ]
    if not chosen:
        return []
    scores = weigh(
        [freqs[i] for i in chosen],
        [rows[i][1] for i in chosen],
        doc_freqs,
        n_docs,
        n_tokens / n_docs,
    )
    ranked = sorted(zip((rows[i][0] for i in chosen), scores, strict=True), key=_order)
    return ranked[:limit]


def _order(hit: tuple[Any, float]) -> tuple[float, Any]:
    return (-hit[1], hit[0])


# -- BM25 inside PostgreSQL --------------------------------------------------------------------
#
# When every query term is one lexeme (no CJK run, no word of several tokens), one
# statement ranks: among the agent's rows holding any query lexeme, `p` lists each row's
# query lexemes with their position counts (tf), `d` counts the rows holding each lexeme
# (every row, before the filters: FTS5's statistics), `st` reads N and the mean length from
# corpus_stats, and `s` sums FTS5's BM25 over the kept rows; only the best `limit` rows
# leave the server, joined back to their rows through the primary key only once they are
# chosen (a join before the LIMIT cost 130 ms on a planner without statistics). The same
# formula as `sqlmem.search.bm25` (constants taken from it).

_IDF = "ln((st.n - d.df + 0.5) / (d.df + 0.5))"


def bm25_statement(table: str, alias: str, key: str, kept: str, columns: str, corpus: int) -> str:
    """The ranking statement over `table AS alias`; `key` is the row's primary key after
    agent_id (the best `limit` are joined back through it, and it breaks ties),
    `kept` is the filters' predicate, `columns` what the result rows hold before the score.
    Parameters: agent, query (tsquery), lexemes, need (1 for "any", the term count for
    "all"), limit, and the filters' own."""
    return f"""
WITH c AS (
    SELECT {key} AS key, {alias}.doc_len, {alias}.tsv, {kept} AS kept
    FROM {table} AS {alias}
    WHERE {alias}.agent_id = %(agent)s AND {alias}.tsv @@ %(query)s::tsquery
), p AS (
    SELECT c.key, c.doc_len, c.kept, u.lexeme, cardinality(u.positions)::float8 AS tf
    FROM c CROSS JOIN LATERAL unnest(c.tsv) AS u
    WHERE u.lexeme = ANY(%(lexemes)s::text[])
), d AS (
    SELECT p.lexeme, count(*)::float8 AS df FROM p GROUP BY p.lexeme
), st AS (
    SELECT docs::float8 AS n, tokens::float8 / greatest(docs, 1) AS avgdl
    FROM corpus_stats WHERE agent_id = %(agent)s AND corpus = {corpus}
), s AS (
    SELECT p.key, sum(
        (CASE WHEN {_IDF} <= 0 THEN {MIN_IDF!r} ELSE {_IDF} END)
        * (p.tf * {K1 + 1!r}) / (p.tf + {K1!r} * ({1 - B!r} + {B!r} * p.doc_len / st.avgdl))
    ) AS score
    FROM p JOIN d ON d.lexeme = p.lexeme CROSS JOIN st
    WHERE p.kept
    GROUP BY p.key
    HAVING count(*) >= %(need)s
    ORDER BY score DESC, p.key
    LIMIT %(limit)s
)
SELECT {columns}, s.score
FROM s JOIN {table} AS {alias} ON {alias}.agent_id = %(agent)s AND {key} = s.key
ORDER BY s.score DESC, s.key
"""


def single_lexemes(terms: Sequence[Term]) -> bool:
    """True when the in-database ranking applies: every term one lexeme, all distinct."""
    return all(len(t.tokens) == 1 for t in terms) and len(lexemes(terms)) == len(terms)
