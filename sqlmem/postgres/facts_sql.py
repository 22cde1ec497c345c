"""SQL text of the PostgreSQL fact store. Every statement names one agent_id (Citus: one
shard); values are always bound. The filters' WHERE fragments are constants picked by
`Filters.key` and `ItemFilters.key` and joined by a cached builder, so each filter
combination is one text. Every read skips expired facts (`LIVE`).
"""

from __future__ import annotations

from functools import cache

from .corpus_sql import FACTS, LOCK_CORPUS, STATS, UPDATE_STATS
from .ranking import bm25_statement

__all__ = [
    "ANY_UNFINGERPRINTED",
    "CATEGORIES",
    "COUNT",
    "DELETE",
    "EXPIRE",
    "FACTS",
    "FACT_COLUMNS",
    "ID_EXISTS",
    "LIVE",
    "LOCK_CORPUS",
    "PROMOTE",
    "PROMOTE_ELIGIBLE",
    "REMEMBER_FIND",
    "REMEMBER_MERGE",
    "SEARCH_CANDIDATES",
    "SELECT_BY_PK",
    "SELECT_ONE",
    "SET_FINGERPRINT",
    "STATS",
    "STATS_FOR_UPSERT",
    "TAGS",
    "UNEXPIRED",
    "UNFINGERPRINTED",
    "UPDATE_STATS",
    "UPSERT",
    "VALID_AT",
    "VALID_AT_WINDOW",
    "filter_sql",
    "list_sql",
    "ranked_sql",
    "search_sql",
    "valid_at_shape",
]


FACT_COLUMNS = (
    "f.id, f.content, f.source, f.category, f.tags, f.metadata, f.created_at, f.updated_at,"
    " f.layer, f.kind, f.confidence, f.salience, f.refs, f.expires_at, f.fingerprint, f.hits,"
    " f.key, f.valid_from, f.valid_to, f.superseded_by"
)

#: What every read applies: expiry, a fact is visible while its expires_at is
#: NULL or later than %(now)s (the caller's clock, the one the twin uses too), and valid
#: time (`rules.chains`): not superseded by now, not valid only later.
UNEXPIRED = "(f.expires_at IS NULL OR f.expires_at > %(now)s)"
LIVE = (
    "(f.expires_at IS NULL OR f.expires_at > %(now)s)"
    " AND (f.valid_to IS NULL OR f.valid_to > %(now)s)"
    " AND (f.valid_from IS NULL OR f.valid_from <= %(now)s)"
)
#: `as_of=`: valid at %(at)s instead of now; with it, LIVE is only UNEXPIRED.
VALID_AT = (
    "coalesce(f.valid_from, f.created_at) <= %(at)s AND (f.valid_to IS NULL OR f.valid_to > %(at)s)"
)


# A batch's share of the statistics, before its upsert and after LOCK_CORPUS (a statement
# of its own: this one's snapshot is then taken under the lock, so the old lengths it
# reads are the latest): the ids already stored count as updates (their old length goes,
# the new one comes), the others as new rows. Computed in the server: no result to wait
# for, so it is pipelined with the lock and the upsert (`PostgresFactStore._upsert`).
STATS_FOR_UPSERT = f"""
UPDATE corpus_stats AS c
SET docs = c.docs + %(count)s - o.n, tokens = c.tokens + %(tokens)s - o.t
FROM (SELECT count(*) AS n, coalesce(sum(doc_len), 0) AS t
      FROM facts WHERE agent_id = %(agent)s AND id = ANY(%(ids)s)) AS o
WHERE c.agent_id = %(agent)s AND c.corpus = {FACTS}
"""

# created_at: the given one, else now for a new fact and the stored one for an update.
UPSERT = """
INSERT INTO facts AS f (agent_id, id, content, source, category, tags, tag_set, metadata, meta,
                        created_at, updated_at, doc_len, tsv, layer, kind, confidence,
                        salience, refs, expires_at, fingerprint, hits, key, valid_from)
VALUES (%(agent)s, %(id)s, %(content)s, %(source)s, %(category)s, %(tags)s, %(tag_set)s,
        %(metadata)s, %(meta)s::jsonb, coalesce(%(created)s, %(now)s),
        coalesce(%(updated)s, %(now)s), %(doc_len)s, %(tsv)s::tsvector, %(layer)s, %(kind)s,
        %(confidence)s, %(salience)s, %(refs)s, %(expires)s, %(fingerprint)s,
        coalesce(%(hits)s, 1), %(key)s, %(valid_from)s)
ON CONFLICT (agent_id, id) DO UPDATE SET
    content = excluded.content, source = excluded.source, category = excluded.category,
    tags = excluded.tags, tag_set = excluded.tag_set, metadata = excluded.metadata,
    meta = excluded.meta, created_at = coalesce(%(created)s, f.created_at),
    updated_at = excluded.updated_at, doc_len = excluded.doc_len, tsv = excluded.tsv,
    layer = excluded.layer, kind = excluded.kind, confidence = excluded.confidence,
    salience = excluded.salience, refs = excluded.refs, expires_at = excluded.expires_at,
    fingerprint = excluded.fingerprint, hits = coalesce(%(hits)s, f.hits),
    key = excluded.key, valid_from = coalesce(excluded.valid_from, f.valid_from)
"""

DELETE = "DELETE FROM facts WHERE agent_id = %s AND id = ANY(%s) RETURNING doc_len"

SELECT_ONE = (
    f"SELECT {FACT_COLUMNS} FROM facts AS f"
    f" WHERE f.agent_id = %(agent)s AND f.id = %(id)s AND {UNEXPIRED}"
)
SELECT_BY_PK = (
    f"SELECT f.pk, {FACT_COLUMNS} FROM facts AS f WHERE f.agent_id = %s AND f.pk = ANY(%s)"
)

COUNT = f"SELECT count(*) FROM facts AS f WHERE f.agent_id = %(agent)s AND {LIVE}"

TAGS = f"""
SELECT t, count(*) FROM facts AS f CROSS JOIN LATERAL unnest(f.tag_set) AS t
WHERE f.agent_id = %(agent)s AND {LIVE} GROUP BY t
"""
CATEGORIES = (
    "SELECT DISTINCT category FROM facts AS f"
    f" WHERE f.agent_id = %(agent)s AND f.category != '' AND {LIVE}"
)

# -- filters (rules.filters.Filters, rules.items.ItemFilters; the twin's `accepts`) ---------
#
# metadata (rules.metadata's compiled conditions, bound as jsonb by `fact_params.filter_params`):
# the equalities are one object; `@>` narrows through the GIN index, but containment is
# looser than SPEC's typed equality (1 = 1.0, [1, 2] inside [1, 2, 3]), so each key's
# value is then compared by jsonb's text form, which is canonical (keys sorted, numbers as
# written). Floats are written by `codec.jsonb_text` as their exact decimal value with a
# fraction (1e20 -> 100000000000000000000.0), so a float never prints like an integer and
# numeric comparisons are exact, as Python's int/float comparisons are. The other
# operators are an array of [key, op, arg]: `in`/`nin` by the same text equality, the
# orderings numbers with numbers (numeric) and strings with strings (bytes, COLLATE "C":
# code point order), a missing key holding only for `nin` and `lacks`.
_HAVE = "(f.meta -> (c.v ->> 0))"
_TEXT_HAVE = f"({_HAVE} #>> '{{}}') COLLATE \"C\""
_TEXT_ARG = '(c.v ->> 2) COLLATE "C"'
_NUMBER_HAVE = f"({_HAVE})::numeric"
_NUMBER_ARG = "(c.v -> 2)::numeric"
# -1, 0 or 1 as the fact's value is below, equal to or above the argument; NULL when they
# do not compare (another type, or the key missing): the orderings then never hold.
_COMPARED = f"""(CASE jsonb_typeof(c.v -> 2)
        WHEN 'string' THEN CASE WHEN jsonb_typeof({_HAVE}) = 'string' THEN
            CASE WHEN {_TEXT_HAVE} < {_TEXT_ARG} THEN -1
                 WHEN {_TEXT_HAVE} > {_TEXT_ARG} THEN 1 ELSE 0 END END
        ELSE CASE WHEN jsonb_typeof({_HAVE}) = 'number' THEN
            CASE WHEN {_NUMBER_HAVE} < {_NUMBER_ARG} THEN -1
                 WHEN {_NUMBER_HAVE} > {_NUMBER_ARG} THEN 1 ELSE 0 END END
    END)"""
_IN = (
    f"EXISTS (SELECT 1 FROM jsonb_array_elements(c.v -> 2) AS w(x) WHERE {_HAVE}::text = w.x::text)"
)
_METADATA = f"""f.meta @> %(meta)s::jsonb
AND NOT EXISTS (SELECT 1 FROM jsonb_each(%(meta)s::jsonb) AS q
    WHERE (f.meta -> q.key)::text IS DISTINCT FROM q.value::text)
AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(%(mops)s::jsonb) AS c(v)
    WHERE NOT coalesce(CASE c.v ->> 1
        WHEN 'in' THEN {_IN}
        WHEN 'nin' THEN NOT {_IN}
        WHEN 'has' THEN f.meta ? (c.v ->> 0)
        WHEN 'lacks' THEN NOT f.meta ? (c.v ->> 0)
        WHEN 'gt' THEN {_COMPARED} > 0
        WHEN 'gte' THEN {_COMPARED} >= 0
        WHEN 'lt' THEN {_COMPARED} < 0
        WHEN 'lte' THEN {_COMPARED} <= 0
        ELSE false
    END, false))"""
_FILTERS = (
    "f.tag_set @> %(tags)s::text[]",
    "(f.category = %(cat)s OR (f.category >= %(cat_lo)s AND f.category < %(cat_hi)s))",
    "f.source = %(source)s",
    "f.created_at >= %(since)s",
    "f.created_at <= %(until)s",
    _METADATA,
)
_ITEM_FILTERS = (
    "f.layer = ANY(%(layers)s::text[])",
    "f.kind = %(kind)s",
    "f.confidence >= %(min_confidence)s",
    VALID_AT,
)

FilterKey = tuple[bool, ...]
NO_ITEM_KEY: FilterKey = (False, False, False, False)


#: `list(state=...)`: the stored facts each state shows besides the live ones (read now;
#: `rules.chains.in_state`).
_STATE_TESTS = {
    "superseded": f"{UNEXPIRED} AND f.valid_to <= %(now)s",
    "expired": "f.expires_at <= %(now)s",
    "all": "TRUE",
}


@cache
def filter_sql(key: FilterKey, item_key: FilterKey = NO_ITEM_KEY, state: str = "live") -> str:
    """The filters present in `key` and `item_key` ANDed, and the expiry test (`LIVE`);
    for a listing of another `state`, that state's test instead."""
    parts = [f"({frag})" for frag, on in zip(_FILTERS, key, strict=True) if on]
    # item keys of 0.2 callers have three flags: no `as_of` (zip stops at the shorter)
    parts += [f"({frag})" for frag, on in zip(_ITEM_FILTERS, item_key, strict=False) if on]
    as_of = len(item_key) > 3 and item_key[3]
    visible = (UNEXPIRED if as_of else LIVE) if state == "live" else _STATE_TESTS[state]
    return " AND ".join([*parts, visible])


@cache
def search_sql(key: FilterKey, item_key: FilterKey = NO_ITEM_KEY) -> str:
    """Rows holding any query lexeme, unfiltered (the statistics count them all, expired
    ones too until expire(), as FTS5's do), with their length, the positions of the query's
    lexemes and whether the filters keep them."""
    return f"""
SELECT f.pk, f.doc_len,
       (SELECT jsonb_object_agg(u.lexeme, u.positions) FROM unnest(f.tsv) AS u
        WHERE u.lexeme = ANY(%(lexemes)s::text[])),
       {filter_sql(key, item_key)}
FROM facts AS f
WHERE f.agent_id = %(agent)s AND f.tsv @@ %(query)s::tsquery
"""


SEARCH_CANDIDATES = search_sql((False,) * 6)


#: How many of the newest facts a page `as_of` a time looks at first (`window=True`).
VALID_AT_WINDOW = 2000


@cache
def list_sql(
    key: FilterKey,
    item_key: FilterKey,
    oldest_first: bool,
    limited: bool,
    state: str = "live",
    window: bool = False,
) -> str:
    """A listing, newest (or oldest) first; a page `as_of` a time (`valid_at_shape`) is
    read by `_valid_at_window` (with `window`: the page among the newest facts only, the
    answer when they hold a whole page) or `_valid_at_page`."""
    where = f"f.agent_id = %(agent)s AND {filter_sql(key, item_key, state)}"
    if valid_at_shape(item_key, oldest_first, limited):
        if window:
            return (
                f"SELECT {FACT_COLUMNS} FROM (SELECT * FROM facts WHERE agent_id = %(agent)s"
                " ORDER BY created_at DESC, pk DESC LIMIT %(window)s) AS f"
                f" WHERE {where} ORDER BY f.created_at DESC, f.pk DESC"
                " LIMIT %(limit)s OFFSET %(offset)s"
            )
        return _valid_at_page(where)
    order = "ASC" if oldest_first else "DESC"
    page = " LIMIT %(limit)s OFFSET %(offset)s" if limited else ""
    return (
        f"SELECT {FACT_COLUMNS} FROM facts AS f WHERE {where}"
        f" ORDER BY f.created_at {order}, f.pk {order}{page}"
    )


def valid_at_shape(item_key: FilterKey, oldest_first: bool, limited: bool) -> bool:
    """Whether a listing is a page `as_of` a time, newest first."""
    return len(item_key) > 3 and item_key[3] and limited and not oldest_first


_OUTER_COLUMNS = FACT_COLUMNS.replace("f.", "v.")


def _valid_at_page(where: str) -> str:
    """A page of the facts valid at %(at)s, newest first, in two bounded parts: the facts
    created by then (facts_created walked down from %(at)s, stopping after limit + offset
    passing rows) and those created later with a valid_from backdated to it (from
    facts_valid_from, which holds only facts with an explicit valid_from; `created_at + 0`
    keeps the planner from walking facts_created down from now for them, which read
    every fact created since %(at)s: most of them for a moment long ago)."""
    part = f"SELECT {FACT_COLUMNS}, f.pk AS pk FROM facts AS f WHERE {where}"
    limit = " LIMIT %(limit)s + %(offset)s"
    began = f"{part} AND f.created_at <= %(at)s ORDER BY f.created_at DESC, f.pk DESC{limit}"
    backdated = (
        f"{part} AND f.valid_from <= %(at)s AND f.created_at + 0 > %(at)s"
        f" ORDER BY f.created_at + 0 DESC, f.pk DESC{limit}"
    )
    return (
        f"SELECT {_OUTER_COLUMNS} FROM (({began}) UNION ALL ({backdated})) AS v"
        " ORDER BY v.created_at DESC, v.pk DESC LIMIT %(limit)s OFFSET %(offset)s"
    )


@cache
def ranked_sql(key: FilterKey, item_key: FilterKey = NO_ITEM_KEY) -> str:
    """BM25 ranked inside PostgreSQL (`ranking.bm25_statement`), for queries of single lexemes.
    Equal scores in insertion order (pk), as the twin and the Python path rank them: a
    hybrid search's fused scores depend on that order (ranks, not scores, are fused)."""
    return bm25_statement("facts", "f", "f.pk", filter_sql(key, item_key), FACT_COLUMNS, FACTS)


# -- memory items (sqlmem.postgres.items) ---------------------------------------------------

ID_EXISTS = "SELECT 1 FROM facts WHERE agent_id = %(agent)s AND id = %(id)s"
#: remember's lookup: the oldest live fact of the layer with the fingerprint, locked.
REMEMBER_FIND = f"""
SELECT f.pk, f.id, f.tags, f.refs, f.metadata, f.confidence, f.salience, f.expires_at
FROM facts AS f
WHERE f.agent_id = %(agent)s AND f.fingerprint = %(fingerprint)s AND f.layer = %(layer)s
    AND f.key = %(key)s AND {LIVE}
ORDER BY f.created_at, f.pk LIMIT 1 FOR UPDATE
"""
REMEMBER_MERGE = """
UPDATE facts SET tags = %(tags)s, tag_set = %(tag_set)s, refs = %(refs)s,
    metadata = %(metadata)s, meta = %(meta)s::jsonb, confidence = %(confidence)s,
    salience = %(salience)s, expires_at = %(expires)s, hits = hits + 1, updated_at = %(now)s
WHERE agent_id = %(agent)s AND pk = %(pk)s
"""
PROMOTE = f"""
UPDATE facts AS f SET layer = %(layer)s, updated_at = %(now)s
WHERE f.agent_id = %(agent)s AND f.id = %(id)s AND f.layer <> %(layer)s AND {UNEXPIRED}
"""
PROMOTE_ELIGIBLE = f"""
UPDATE facts AS f SET layer = %(to_layer)s, updated_at = %(now)s
WHERE f.agent_id = %(agent)s AND f.layer = %(from_layer)s
    AND f.confidence >= %(min_confidence)s AND f.hits >= %(min_hits)s AND {LIVE}
RETURNING f.id, f.created_at, f.pk, f.key
"""
EXPIRE = """
DELETE FROM facts WHERE agent_id = %(agent)s AND expires_at <= %(now)s RETURNING doc_len
"""
#: Rows stored before migration 0002 (fingerprint ''), filled at open, a batch at a time.
UNFINGERPRINTED = """
SELECT pk, content, metadata FROM facts WHERE agent_id = %s AND fingerprint = '' LIMIT %s FOR UPDATE
"""
ANY_UNFINGERPRINTED = "SELECT 1 FROM facts WHERE agent_id = %s AND fingerprint = '' LIMIT 1"
SET_FINGERPRINT = (
    "UPDATE facts SET fingerprint = %s, meta = %s::jsonb WHERE agent_id = %s AND pk = %s"
)

# -- facts that change (postgres/chains.py; the rules in rules/chains.py) ---------------------

_CHAIN_ORDER = "ORDER BY coalesce(f.valid_from, f.created_at), f.pk"
HISTORY_BY_KEY = (
    f"SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.agent_id = %(agent)s AND f.chain = %(key)s"
    f" AND {UNEXPIRED} {_CHAIN_ORDER}"
)
CHAIN_OF = "SELECT chain, layer FROM facts WHERE agent_id = %(agent)s AND id = %(id)s"
HISTORY_OF_CHAIN = (
    f"SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.agent_id = %(agent)s"
    f" AND f.chain = %(chain)s AND f.layer = %(layer)s AND {UNEXPIRED} {_CHAIN_ORDER}"
)
