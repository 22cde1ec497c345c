"""SQL text of the fact vectors (migrations/0006_fact_vectors.sql): constants and cached
builders only, every value bound."""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any

import apsw

from ...rules.encoding import now_ms
from .facts_sql import (
    ANY_HIDDEN,
    COLUMNS,
    FINGERPRINT_KEY,
    LIVE,
    NO_ITEM_KEY,
    RAREST_TAG,
    UNEXPIRED,
    FilterKey,
    live_test,
    where_clauses,
)

__all__ = [
    "ALL_VECTORS",
    "BATCH_COUNTED",
    "BATCH_DONE",
    "BATCH_MIN_ROWS",
    "EXPORT_PAGE",
    "FILL_BY_ID",
    "FILL_ONE",
    "IDS_BY_PK",
    "IMPORT_TARGET",
    "LIVE_IDS_BY_PK",
    "LIVE_ROWS_BY_PK",
    "PENDING_COUNT",
    "PENDING_PAGE",
    "ROWS_BY_PK",
    "STORED_BY_CONTENT",
    "TAGGED_CANDIDATES",
    "UPSERT_BY_PK",
    "UPSERT_CHUNK",
    "VERSION",
    "WITHOUT_VECTORS",
    "any_hidden",
    "candidates_sql",
    "count_without_vectors",
    "upsert_by_id_sql",
]

_SET = (
    " ON CONFLICT(fact_pk) DO UPDATE SET model = excluded.model, dim = excluded.dim,"
    " content_hash = excluded.content_hash, vector = excluded.vector"
)

#: Vector rows per statement of `upsert_by_id_sql` (5 parameters each).
UPSERT_CHUNK = 1000


@lru_cache(maxsize=32)
def upsert_by_id_sql(rows: int) -> str:
    """The vectors of `rows` facts, written in the facts' own transaction right after
    their upsert, in one statement: (model, dim, hash, vector, id) per row, positional,
    each row finding its fact by id. One statement rather than one per row: every
    statement that may abort keeps a statement journal of the pages it touches, and
    binding a dict by name cost more than the insert itself; together they tripled the
    vector rows' share of the write lock (~10 µs a row against ~5 µs now, CPU time)."""
    return (
        "INSERT INTO fact_vectors(fact_pk, model, dim, content_hash, vector)"
        " SELECT f.pk, v.column1, v.column2, v.column3, v.column4 FROM (VALUES "
        + ",".join(["(?,?,?,?,?)"] * rows)
        # WHERE true: without it `ON` would be read as the join's (SQLite's upsert rule).
        + ") AS v CROSS JOIN facts AS f ON f.id = v.column5 WHERE true"
        + _SET
    )


#: Around a batch of vector rows written by sqlmem: the change is counted once, and the
#: per-row counting triggers stand down until the flag is lowered again in the same
#: transaction (migration 0013). Any other writer leaves the flag at 0, so its rows are
#: counted one by one as before. A rollback takes the raised flag back with the rows.
BATCH_COUNTED = (
    "UPDATE fact_vectors_version SET changes = changes + 1, batch_counted = 1 WHERE id = 1"
)
BATCH_DONE = "UPDATE fact_vectors_version SET batch_counted = 0 WHERE id = 1"
#: Below this many rows the two statements above cost more than the triggers they spare.
BATCH_MIN_ROWS = 4

#: embed_pending's write: only if the content is still the one that was embedded.
FILL_ONE = (
    "INSERT INTO fact_vectors(fact_pk, model, dim, content_hash, vector)"
    " SELECT pk, :model, :dim, :hash, :vector FROM facts WHERE pk = :pk AND content = :content"
    + _SET
)

#: The vector of a fact written inside atomic(), computed after the block committed: only
#: if the fact still holds the content that was embedded.
FILL_BY_ID = (
    "INSERT INTO fact_vectors(fact_pk, model, dim, content_hash, vector)"
    " SELECT pk, :model, :dim, :hash, :vector FROM facts WHERE id = :id AND content = :content"
    + _SET
)

#: Vectors already stored for these texts (the embedding cache): the facts holding the
#: same normalised text are found through facts_fingerprint (`:prefixes`: their
#: fingerprints' first FINGERPRINT_PREFIX hex digits, the index's key), the exact text
#: is compared on those rows, and the vector is read by its fact's key. No index of
#: fact_vectors is involved (migration 0013 dropped the content-hash one: writes paid
#: for it).
STORED_BY_CONTENT = (
    "SELECT f.content, v.vector FROM facts AS f CROSS JOIN fact_vectors AS v"
    " ON v.fact_pk = f.pk"
    f" WHERE {FINGERPRINT_KEY} IN (SELECT value FROM json_each(:prefixes))"
    " AND f.content IN (SELECT value FROM json_each(:texts)) AND v.model = :model"
    " GROUP BY f.content"
)

_MISSING = (
    "NOT EXISTS (SELECT 1 FROM fact_vectors AS v WHERE v.fact_pk = f.pk"
    " AND v.model IS coalesce(:model, v.model))"
)

#: Live facts without a vector of the store's model (of any model when :model is NULL).
# Superseded facts are embedded too: a search `as_of` a past time ranks them.
WITHOUT_VECTORS = f"SELECT count(*) FROM facts AS f WHERE {UNEXPIRED} AND {_MISSING}"
PENDING_COUNT = WITHOUT_VECTORS
PENDING_PAGE = (
    f"SELECT f.pk, f.content FROM facts AS f WHERE f.pk > :after AND {UNEXPIRED} AND {_MISSING}"
    " ORDER BY f.pk LIMIT :limit"
)

#: The full rows of the ranked facts.
ROWS_BY_PK = (
    f"SELECT f.pk, {COLUMNS} FROM facts AS f WHERE f.pk IN (SELECT value FROM json_each(:pks))"
)

#: A hybrid leg's ranked facts: (pk, id) only, fused on ids before any full row is read.
IDS_BY_PK = "SELECT f.pk, f.id FROM facts AS f WHERE f.pk IN (SELECT value FROM json_each(:pks))"

#: The change counter of fact_vectors (migration 0006): the in-memory matrix is current
#: while it has not moved.
VERSION = "SELECT changes FROM fact_vectors_version WHERE id = 1"

#: Every vector of a model and dimension, for the in-memory matrix of unfiltered searches.
ALL_VECTORS = (
    "SELECT fact_pk, vector FROM fact_vectors WHERE model = :model AND dim = :dim ORDER BY fact_pk"
)

#: The full rows of ranked candidates that are still live.
LIVE_ROWS_BY_PK = (
    f"SELECT f.pk, {COLUMNS} FROM facts AS f"
    f" WHERE f.pk IN (SELECT value FROM json_each(:pks)) AND {LIVE}"
)

LIVE_IDS_BY_PK = (
    "SELECT f.pk, f.id FROM facts AS f"
    f" WHERE f.pk IN (SELECT value FROM json_each(:pks)) AND {LIVE}"
)


@cache
def candidates_sql(key: FilterKey, item_key: tuple[bool, ...] = NO_ITEM_KEY) -> str:
    """(pk, vector) of the live facts passing the filters with a vector of the query's
    model and dimension: the rows exact cosine ranks (filters before ranking).

    The filters drive: with tags, the facts holding the rarest wanted tag (one seek into
    fact_tags), else whatever index the planner picks for them (category, time), and only
    then each candidate's vector by its key, so a 2% filter reads 2% of the vectors."""
    where = [
        "v.model = :model",
        "v.dim = :dim",
        *where_clauses(key, item_key),
        live_test(item_key),
    ]
    source = "facts AS f JOIN fact_vectors AS v ON v.fact_pk = f.pk"
    if key[0]:  # tags: the rarest wanted tag's facts drive
        source = (
            "fact_tags AS d CROSS JOIN facts AS f ON f.pk = d.fact_pk"
            " CROSS JOIN fact_vectors AS v ON v.fact_pk = f.pk"
        )
        where.insert(0, RAREST_TAG)
    # No ORDER BY: SQLite would sort the vectors themselves; the caller orders by pk.
    return f"SELECT f.pk, v.vector FROM {source} WHERE " + " AND ".join(where)


#: (pk, vector) of the facts holding every wanted tag, for a tags-only filter while no
#: stored fact is hidden (expired, superseded or not valid yet: `any_hidden`). The
#: rarest tag's index entries drive straight into fact_vectors without reading a facts
#: row: the facts join of `candidates_sql` only tests visibility, which then holds for
#: every fact, and it doubled the cost of reading a 2% filter's vectors. With one wanted
#: tag the driving entry is the whole test (the count below is skipped).
TAGGED_CANDIDATES = (
    "SELECT d.fact_pk, v.vector FROM fact_tags AS d CROSS JOIN fact_vectors AS v"
    f" ON v.fact_pk = d.fact_pk WHERE {RAREST_TAG} AND v.model = :model AND v.dim = :dim"
    " AND (:ntags = 1 OR (SELECT count(*) FROM fact_tags AS t WHERE t.fact_pk = d.fact_pk"
    " AND +t.tag IN (SELECT value FROM json_each(:tags))) = :ntags)"
)


def any_hidden(conn: apsw.Connection) -> bool:
    """Whether a stored fact is expired, superseded or not valid yet (three probes of
    partial indexes that hold only such facts: nothing to read in the usual case)."""
    return bool(conn.execute(ANY_HIDDEN).fetchall()[0][0])


def count_without_vectors(conn: apsw.Connection, model: str | None) -> int:
    """Unexpired facts (superseded ones too) without a vector of `model` (of any model when
    None), for `stats()` and `embed_pending`."""
    row: Any = conn.execute(WITHOUT_VECTORS, {"now": now_ms(), "model": model}).fetchall()
    return int(row[0][0])


#: Export: the live facts' vectors, a page at a time, in fact order.
EXPORT_PAGE = (
    "SELECT v.fact_pk, f.id, v.model, v.dim, v.vector FROM fact_vectors AS v"
    f" CROSS JOIN facts AS f ON f.pk = v.fact_pk WHERE v.fact_pk > :after AND {UNEXPIRED}"
    " ORDER BY v.fact_pk LIMIT :limit"
)
#: Import: the fact a vector record belongs to, and what is stored for it.
IMPORT_TARGET = (
    "SELECT f.pk, f.content, v.model, v.vector FROM facts AS f"
    " LEFT JOIN fact_vectors AS v ON v.fact_pk = f.pk WHERE f.id = ?"
)
UPSERT_BY_PK = (
    "INSERT INTO fact_vectors(fact_pk, model, dim, content_hash, vector)"
    " VALUES (:pk, :model, :dim, :hash, :vector)" + _SET
)
