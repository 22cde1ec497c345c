"""SQL text of the PostgreSQL fact store. Every statement names one agent_id (Citus: one
shard); values are always bound. The filters' WHERE fragments are constants picked by
`Filters.key` and joined by a cached builder, so each filter combination is one text.
"""

from __future__ import annotations

from functools import cache

from .corpus_sql import FACTS, LOCK_CORPUS, STATS, UPDATE_STATS
from .ranking import bm25_statement

__all__ = [
    "CATEGORIES",
    "COUNT",
    "DELETE",
    "FACTS",
    "FACT_COLUMNS",
    "LOCK_CORPUS",
    "SEARCH_CANDIDATES",
    "SELECT_BY_PK",
    "SELECT_OLD_LENGTHS",
    "SELECT_ONE",
    "STATS",
    "TAGS",
    "UPDATE_STATS",
    "UPSERT",
    "filter_sql",
    "list_sql",
    "ranked_sql",
    "search_sql",
]


FACT_COLUMNS = (
    "f.id, f.content, f.source, f.category, f.tags, f.metadata, f.created_at, f.updated_at"
)


SELECT_OLD_LENGTHS = "SELECT id, doc_len FROM facts WHERE agent_id = %s AND id = ANY(%s)"

# created_at: the given one, else now for a new fact and the stored one for an update.
UPSERT = """
INSERT INTO facts AS f (agent_id, id, content, source, category, tags, tag_set, metadata, meta,
                        created_at, updated_at, doc_len, tsv)
VALUES (%(agent)s, %(id)s, %(content)s, %(source)s, %(category)s, %(tags)s, %(tag_set)s,
        %(metadata)s, %(meta)s::jsonb, coalesce(%(created)s, %(now)s),
        coalesce(%(updated)s, %(now)s), %(doc_len)s, %(tsv)s::tsvector)
ON CONFLICT (agent_id, id) DO UPDATE SET
    content = excluded.content, source = excluded.source, category = excluded.category,
    tags = excluded.tags, tag_set = excluded.tag_set, metadata = excluded.metadata,
    meta = excluded.meta, created_at = coalesce(%(created)s, f.created_at),
    updated_at = excluded.updated_at, doc_len = excluded.doc_len, tsv = excluded.tsv
"""

DELETE = "DELETE FROM facts WHERE agent_id = %s AND id = ANY(%s) RETURNING doc_len"

SELECT_ONE = f"SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.agent_id = %s AND f.id = %s"
SELECT_BY_PK = (
    f"SELECT f.pk, {FACT_COLUMNS} FROM facts AS f WHERE f.agent_id = %s AND f.pk = ANY(%s)"
)

COUNT = "SELECT count(*) FROM facts WHERE agent_id = %s"

TAGS = """
SELECT t, count(*) FROM facts AS f CROSS JOIN LATERAL unnest(f.tag_set) AS t
WHERE f.agent_id = %s GROUP BY t
"""
CATEGORIES = "SELECT DISTINCT category FROM facts WHERE agent_id = %s AND category != ''"

# -- filters (rules.filters.Filters; the same predicates as the twin's `accepts`) -----------
#
# metadata: `@>` narrows through the GIN index, but containment is looser than SPEC's typed
# equality (1 = 1.0, [1, 2] inside [1, 2, 3]); jsonb's text form is canonical (keys sorted,
# numbers as written), so comparing it per key is exact.
_FILTERS = (
    "f.tag_set @> %(tags)s::text[]",
    "(f.category = %(cat)s OR (f.category >= %(cat_lo)s AND f.category < %(cat_hi)s))",
    "f.source = %(source)s",
    "f.created_at >= %(since)s",
    "f.created_at <= %(until)s",
    "f.meta @> %(meta)s::jsonb AND NOT EXISTS (SELECT 1 FROM jsonb_each(%(meta)s::jsonb) AS q"
    " WHERE (f.meta -> q.key)::text IS DISTINCT FROM q.value::text)",
)


@cache
def filter_sql(key: tuple[bool, ...]) -> str:
    """The filters present in `key` ANDed; `true` when there are none."""
    parts = [f"({frag})" for frag, on in zip(_FILTERS, key, strict=True) if on]
    return " AND ".join(parts) or "true"


@cache
def search_sql(key: tuple[bool, ...]) -> str:
    """Rows holding any query lexeme, unfiltered (the statistics count them all), with
    their length, the positions of the query's lexemes and whether the filters keep them."""
    return f"""
SELECT f.pk, f.doc_len,
       (SELECT jsonb_object_agg(u.lexeme, u.positions) FROM unnest(f.tsv) AS u
        WHERE u.lexeme = ANY(%(lexemes)s::text[])),
       {filter_sql(key)}
FROM facts AS f
WHERE f.agent_id = %(agent)s AND f.tsv @@ %(query)s::tsquery
"""


SEARCH_CANDIDATES = search_sql((False,) * 6)


@cache
def list_sql(key: tuple[bool, ...], oldest_first: bool, limited: bool) -> str:
    order = "ASC" if oldest_first else "DESC"
    page = " LIMIT %(limit)s OFFSET %(offset)s" if limited else ""
    return (
        f"SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.agent_id = %(agent)s"
        f" AND {filter_sql(key)} ORDER BY f.created_at {order}, f.pk {order}{page}"
    )


@cache
def ranked_sql(key: tuple[bool, ...]) -> str:
    """BM25 ranked inside PostgreSQL (`ranking.bm25_statement`), for queries of single lexemes."""
    return bm25_statement("facts", "f", "f.id", filter_sql(key), FACT_COLUMNS, FACTS)
