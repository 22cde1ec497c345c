"""SQL text of the PostgreSQL fact vectors (migrations/postgres/0003_fact_vectors.sql):
constants and one cached builder, every value bound, every statement naming one agent."""

from __future__ import annotations

from functools import cache

from .facts_sql import NO_ITEM_KEY, UNEXPIRED, FilterKey, filter_sql

__all__ = [
    "FILL_BY_ID",
    "FILL_ONE",
    "PENDING_COUNT",
    "PENDING_PAGE",
    "STORED_BY_HASH",
    "UPSERT_BY_ID",
    "candidates_sql",
]

_SET = """
ON CONFLICT (agent_id, fact_pk) DO UPDATE SET model = excluded.model, dim = excluded.dim,
    content_hash = excluded.content_hash, vector = excluded.vector
"""

#: A fact's vector, written in the fact's own transaction right after its upsert.
UPSERT_BY_ID = (
    """
INSERT INTO fact_vectors (agent_id, fact_pk, model, dim, content_hash, vector)
SELECT agent_id, pk, %(model)s, %(dim)s, %(hash)s, %(vector)s FROM facts
WHERE agent_id = %(agent)s AND id = %(id)s"""
    + _SET
)

#: embed_pending's write: only if the content is still the one that was embedded.
FILL_ONE = (
    """
INSERT INTO fact_vectors (agent_id, fact_pk, model, dim, content_hash, vector)
SELECT agent_id, pk, %(model)s, %(dim)s, %(hash)s, %(vector)s FROM facts
WHERE agent_id = %(agent)s AND pk = %(pk)s AND content = %(content)s"""
    + _SET
)

#: The vector of a fact written inside atomic(), computed after the block committed: only
#: if the fact still holds the content that was embedded.
FILL_BY_ID = (
    """
INSERT INTO fact_vectors (agent_id, fact_pk, model, dim, content_hash, vector)
SELECT agent_id, pk, %(model)s, %(dim)s, %(hash)s, %(vector)s FROM facts
WHERE agent_id = %(agent)s AND id = %(id)s AND content = %(content)s"""
    + _SET
)

#: Vectors already stored for these texts (the embedding cache), by content hash.
STORED_BY_HASH = """
SELECT DISTINCT ON (content_hash) content_hash, vector FROM fact_vectors
WHERE agent_id = %(agent)s AND content_hash = ANY(%(hashes)s::text[]) AND model = %(model)s
"""

_MISSING = """NOT EXISTS (SELECT 1 FROM fact_vectors AS v
    WHERE v.agent_id = f.agent_id AND v.fact_pk = f.pk AND v.model = %(model)s)"""

#: Live facts without a vector of the store's model.
PENDING_COUNT = (
    f"SELECT count(*) FROM facts AS f WHERE f.agent_id = %(agent)s AND {UNEXPIRED} AND {_MISSING}"
)
PENDING_PAGE = f"""
SELECT f.pk, f.content FROM facts AS f
WHERE f.agent_id = %(agent)s AND f.pk > %(after)s AND {UNEXPIRED} AND {_MISSING}
ORDER BY f.pk LIMIT %(limit)s
"""


@cache
def candidates_sql(key: FilterKey, item_key: FilterKey = NO_ITEM_KEY) -> str:
    """(pk, vector) of the live facts passing the filters with a vector of the query's
    model and dimension, in insertion order (ties rank by it, as in the other stores):
    the rows exact cosine ranks (filters before ranking)."""
    return f"""
SELECT f.pk, v.vector FROM fact_vectors AS v
JOIN facts AS f ON f.agent_id = v.agent_id AND f.pk = v.fact_pk
WHERE v.agent_id = %(agent)s AND v.model = %(model)s AND v.dim = %(dim)s
    AND {filter_sql(key, item_key)}
ORDER BY f.pk
"""
