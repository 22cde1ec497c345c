"""A memory pack's candidates in every layer from one ranked statement.

`build_memory_pack` wants, per layer, the best `4 * top_k[layer]` live facts matching the
query (mode "any": the exact OR of its words, filters before ranking). Through the
protocol that is one filtered search per layer, and each one scores every match of the
query and has FTS5 sort them all (`ORDER BY rank`, which a filter keeps from being
bounded): three times the cost of the whole OR query, ~4x a raw top-10 OR query on
100,000 facts before any Python ran.

Here the matches are scored once: SQLite's sorter keeps the best `2 * sum(wants)` by
bm25 (ties by rowid), and the facts rows are read lazily in that order (the subquery is a
co-routine whose order satisfies the outer ORDER BY, so no second sort) until every
layer has what it wants. Exactness: a layer that has its count among the best rows of
the whole query has its best rows; a layer that is still short when fewer rows matched
than the sorter kept has every match. Only a layer still short after a full sorter (a
layer rare among the matches) runs the per-layer filtered search, in the same read
snapshot. Ties in bm25 go by rowid, the order FTS5's sorted mode gives them too (pinned
by tests/contract/test_pack_contract.py against the protocol path).

Rows are the stored-fact rows of `rules.rows.facts_from_rows` (ranked: bm25 last, lower
is better; None with an empty query), so the pack builds `Fact`s for the items it keeps
only. Expired facts are skipped by the statement itself: no probe, no second shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import apsw

from ...errors import InvalidArgumentError
from ...rules.candidates import FactCandidate
from ...rules.encoding import now_ms
from ...rules.filters import NO_FILTERS, check_query
from ...rules.items import check_layer, make_item_filters
from ...search.query import MAX_QUERY_TERMS, QueryCompiler, phrases
from ..core.engine import Engine
from . import facts_sql as sql
from .fts_any import capped_terms
from .fts_names import FACTS_FTS

__all__ = ["LAYER_COLUMN", "layered_candidates", "layered_rows"]

#: Where a row's layer is (`facts_sql`'s column list, as `facts_from_rows` reads it).
LAYER_COLUMN = 8
#: The other columns a pack reads before it builds a Fact (same list), and the bm25 after.
_ID, _CONTENT, _UPDATED, _CONFIDENCE, _SALIENCE, _FINGERPRINT, _RANK = 0, 1, 7, 10, 11, 14, 20

_LIVE = sql.LIVE_SEARCH

#: The best :limit matches of the whole query (bm25, then rowid), live and confident
#: enough, facts rows read one by one as the caller steps.
LAYERED = (
    f"SELECT {sql.COLUMNS}, r.score FROM ("
    f"SELECT rowid AS pk, bm25({FACTS_FTS}) AS score FROM {FACTS_FTS}"
    f" WHERE {FACTS_FTS} MATCH :query ORDER BY score, rowid LIMIT +:limit"
    f") AS r CROSS JOIN facts AS f ON f.pk = r.pk"
    f" WHERE {_LIVE} AND +f.confidence >= :min_confidence ORDER BY r.score, r.pk"
)

#: How many rows match, counted up to a bound.
_MATCHES_UP_TO = (
    f"SELECT count(*) FROM (SELECT 1 FROM {FACTS_FTS} WHERE {FACTS_FTS} MATCH ? LIMIT ?)"
)

#: With an empty query: a layer's newest facts by updated_at (ties: the larger id first).
NEWEST = (
    f"SELECT {sql.COLUMNS}, NULL FROM facts AS f"
    f" WHERE f.layer = :layer AND {sql.LIVE} AND f.confidence >= :min_confidence"
    " ORDER BY f.updated_at DESC, f.id DESC LIMIT :limit"
)


def layered_rows(
    engine: Engine,
    compiler: QueryCompiler,
    query: str,
    wants: Mapping[str, int],
    min_confidence: float,
) -> dict[str, list[Any]]:
    """Per layer of `wants` (layer -> how many), its best rows for `query`, best first."""
    query = check_query(query, "any")
    want = _checked(wants)
    floor = _floor(min_confidence)
    found: dict[str, list[Any]] = {layer: [] for layer in want}
    wanted = {layer: n for layer, n in want.items() if n > 0}
    if not wanted:
        return found
    now = now_ms()
    if not query.strip():
        with engine.read() as conn:
            for layer, n in wanted.items():
                params = {"layer": layer, "min_confidence": floor, "now": now, "limit": n}
                found[layer] = conn.execute(NEWEST, params).fetchall()
        return found
    terms = compiler.terms(query)
    match = compiler.match(query, "any") if len(terms) <= MAX_QUERY_TERMS else None
    if match is None and not terms:
        return found
    with engine.read() as conn:
        if match is None:  # a long query: its rarest words, read in this snapshot
            match = phrases(capped_terms(conn, sql.ANY, terms, "any"), " OR ")
            if match is None:
                return found
        limit = 2 * sum(wanted.values())
        short = _step(conn, match, limit, floor, now, found, wanted)
        for layer in short:
            found[layer] = _one_layer(conn, match, layer, wanted[layer], floor, now)
    return found


def layered_candidates(
    engine: Engine,
    compiler: QueryCompiler,
    query: str,
    wants: Mapping[str, int],
    min_confidence: float,
) -> dict[str, list[FactCandidate]]:
    """`layered_rows` as typed candidates: the pack reads named fields, and builds the
    `Fact`s of the rows it keeps only (`rules.candidates.materialize`)."""
    found = layered_rows(engine, compiler, query, wants, min_confidence)
    return {layer: [_candidate(layer, row) for row in rows] for layer, rows in found.items()}


def _candidate(layer: str, row: Any) -> FactCandidate:
    rank = row[_RANK]
    ranked = rank is not None
    return FactCandidate(
        layer, -rank if ranked else None, row[_SALIENCE], row[_CONFIDENCE], row[_UPDATED],
        row[_ID], row[_FINGERPRINT], row[_CONTENT], row=row if ranked else row[:-1],
        ranked=ranked,
    )  # fmt: skip


def _step(
    conn: apsw.Connection,
    match: str,
    limit: int,
    floor: float,
    now: int,
    found: dict[str, list[Any]],
    wanted: dict[str, int],
) -> list[str]:
    """Reads the best `limit` matches until every layer has its count; returns the
    layers that may be missing rows (short, and the sorter was full)."""
    missing = dict(wanted)
    seen = 0
    params = {"query": match, "limit": limit, "min_confidence": floor, "now": now}
    cursor = conn.execute(LAYERED, params)
    try:
        for row in cursor:
            seen += 1  # only rows passing the filters: a lower bound of the sorter's rows
            layer = row[LAYER_COLUMN]
            need = missing.get(layer)
            if need is None:
                continue
            found[layer].append(row)
            if need > 1:
                missing[layer] = need - 1
                continue
            del missing[layer]
            if not missing:
                return []  # the rest of the sorter's rows are never read
    finally:
        cursor.close()
    if not missing or not _sorter_was_full(conn, match, limit, seen):
        return []
    return list(missing)


def _sorter_was_full(conn: apsw.Connection, match: str, limit: int, seen: int) -> bool:
    """Whether the query matches `limit` rows or more (then rows past the sorter may
    belong to a short layer). `seen` counts passing rows only, so below `limit` the
    matches are counted (up to `limit`) in the same snapshot."""
    if seen >= limit:
        return True
    count: Any = conn.execute(_MATCHES_UP_TO, (match, limit)).fetchall()[0][0]
    return int(count) >= limit


def _one_layer(
    conn: apsw.Connection, match: str, layer: str, want: int, floor: float, now: int
) -> list[Any]:
    """The protocol's filtered search for one layer (exact, FTS5's rank order)."""
    filters = make_item_filters(layer, None, floor)
    params = filters.params()
    params.update(query=match, limit=want, now=now)
    rows: list[Any] = conn.execute(sql.search_sql(NO_FILTERS.key, filters.key), params).fetchall()
    return rows


def _checked(wants: Mapping[str, int]) -> dict[str, int]:
    if not isinstance(wants, Mapping):
        raise InvalidArgumentError("wants must map layers to counts")
    out = {}
    for layer, n in wants.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidArgumentError(f"wants[{layer!r}] must be an int >= 0, got {n!r:.80}")
        out[check_layer(layer)] = n
    return out


def _floor(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidArgumentError(f"min_confidence must be in [0, 1], got {value!r:.80}")
    return float(value)
