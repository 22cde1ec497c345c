"""SQL text of the fact store: constants, and small cached builders for the variants.

Every value is bound. The few dynamic pieces are which filters are present (6-bit and 3-bit keys)
and, for batch upserts, how many rows one statement carries; each builder is cached, so a
given call shape always sends the same text and hits apsw's statement cache.

Filters are SQL predicates over `facts AS f`, named parameters supplied by
`Filters.params()`:
- tags: a count of the fact's `fact_tags` rows among the wanted tags (an index lookup per
  candidate through fact_tags_fact) must equal the number of distinct wanted tags; the tags
  arrive as one bound JSON array so the text does not depend on how many there are. The
  unary `+` on `t.tag` keeps SQLite from seeking (fact_pk, tag) once per wanted tag: it
  reads the candidate's own few tags and tests each against the wanted list, built once
  per statement. Without it a filter of 500 tags cost ~100x one of 2 tags
  (360 ms against 3 ms for `list` on 10,000 facts); with it ~1.2x.
- category: equal, or in the half-open range [cat + "/", cat + "0"), which holds exactly
  the paths below `cat` because category characters are ASCII and "0" follows "/".
- metadata: no condition of the compiled filter (`rules.metadata`: a bound JSON array of
  `[key, op, arg]`) may fail. The fact's value is found with json_each, so a key is
  compared literally (a JSON path would read "a.b" as two levels, and cannot spell every
  key); a missing key makes the condition hold only for `nin` and `lacks`. Scalars are
  equal when their JSON type and atom agree (so true/1/"1" differ); containers when their
  json_tree rows (path, type, atom) agree. Orderings compare atoms of the same kind
  (integer/real with integer/real, text with text; SQLite compares integers with reals
  exactly, and text by its UTF-8 bytes, which is code-point order as in Python).
"""

from __future__ import annotations

from functools import cache, lru_cache

from .fts_any import any_queries
from .fts_names import FACTS_FTS

__all__ = [
    "ANY",
    "ANY_EXPIRED",
    "ANY_HIDDEN",
    "ANY_HIDDEN_AND_AVERAGES",
    "ANY_INVALID",
    "ANY_UNFINGERPRINTED",
    "CATEGORIES",
    "CHAIN_OF",
    "COLUMNS",
    "COUNT",
    "DELETE_MANY",
    "DELETE_ONE",
    "EXPIRE",
    "EXPIRED",
    "EXPORT_FACTS_PAGE",
    "FINGERPRINT_KEY",
    "FINGERPRINT_PREFIX",
    "HIDDEN",
    "HISTORY_BY_KEY",
    "HISTORY_OF_CHAIN",
    "ID_EXISTS",
    "IMPORT_STORED_FACT",
    "LIVE",
    "LIVE_SEARCH",
    "METADATA_SCALAR",
    "NO_ITEM_KEY",
    "PREDICATES",
    "PROMOTE",
    "PROMOTE_ELIGIBLE",
    "RAREST_TAG",
    "REMEMBER_FIND",
    "REMEMBER_MERGE",
    "SELECT_BY_ID",
    "SELECT_ONE",
    "SET_FINGERPRINT",
    "TAGS",
    "UNEXPIRED",
    "UNFINGERPRINTED",
    "UPSERT_CHUNK",
    "VALID_AT",
    "FilterKey",
    "live_test",
    "search_live_sql",
    "search_sql",
    "upsert_sql",
    "where_clauses",
]

_COLUMNS = (
    "f.id, f.content, f.source, f.category, f.tags, f.metadata, f.created_at, f.updated_at,"
    " f.layer, f.kind, f.confidence, f.salience, f.refs, f.expires_at, f.fingerprint, f.hits,"
    " f.key, f.valid_from, f.valid_to, f.superseded_by"
)
#: A stored fact's columns, in the order `rules.rows.facts_from_rows` reads them.
COLUMNS = _COLUMNS

#: What every read applies (expiry, and valid time, `rules.chains`): a fact is
#: visible while its expires_at is NULL or later than :now (bound by the caller, the
#: clock the twin uses too) and it is valid now: not superseded by then (valid_to) and
#: not valid only later (an explicit valid_from). Two shapes of it: LIVE tests a row
#: already read (search candidates, list); HIDDEN is the set of rows it excludes, read
#: from the partial indexes facts_expires, facts_valid_to and facts_valid_from (only the
#: facts that expire, or have a valid time, are in them), for aggregates that should not
#: read every row (count, tags, categories).
UNEXPIRED = "(f.expires_at IS NULL OR f.expires_at > :now)"
LIVE = (
    "(f.expires_at IS NULL OR f.expires_at > :now)"
    " AND (f.valid_to IS NULL OR f.valid_to > :now)"
    " AND (f.valid_from IS NULL OR f.valid_from <= :now)"
)
#: `as_of=`: valid at :at instead of now (expiry still at :now); an item filter
#: (`rules.items.ItemFilters.as_of_ms`) whose presence replaces LIVE with UNEXPIRED.
VALID_AT = (
    "coalesce(+f.valid_from, +f.created_at) <= :at AND (+f.valid_to IS NULL OR +f.valid_to > :at)"
)
# In FTS-driven searches the row is reached by its primary key: the unary `+` keeps a bound
# `:now` from making a STAT4 build re-prepare the statement (see _SEARCH_PREDICATES).
_LIVE_SEARCH = (
    "(+f.expires_at IS NULL OR +f.expires_at > :now)"
    " AND (+f.valid_to IS NULL OR +f.valid_to > :now)"
    " AND (+f.valid_from IS NULL OR +f.valid_from <= :now)"
)
_UNEXPIRED_SEARCH = "(+f.expires_at IS NULL OR +f.expires_at > :now)"
#: LIVE for row-level tests of a search reached through FTS (pack_search too).
LIVE_SEARCH = _LIVE_SEARCH
EXPIRED = "SELECT pk FROM facts WHERE expires_at <= :now"
HIDDEN = (
    f"{EXPIRED} UNION SELECT pk FROM facts WHERE valid_to <= :now"
    " UNION SELECT pk FROM facts WHERE valid_from > :now"
)


def live_test(item_key: tuple[bool, ...], *, searched: bool = False) -> str:
    """The visibility test of a read: LIVE, or only the expiry test when the read is
    `as_of` a time (its VALID_AT item filter tests valid time)."""
    as_of = len(item_key) > 3 and item_key[3]
    if searched:
        return _UNEXPIRED_SEARCH if as_of else _LIVE_SEARCH
    return UNEXPIRED if as_of else LIVE


#: `get` returns any fact, superseded ones too (not expired ones).
SELECT_BY_ID = f"SELECT {_COLUMNS} FROM facts AS f WHERE f.id = :id AND {UNEXPIRED}"
SELECT_ONE = SELECT_BY_ID  # the name the shared SQL fact port reads
COUNT = f"SELECT (SELECT count(*) FROM facts) - (SELECT count(*) FROM ({HIDDEN}))"
#: Whether any stored fact has expired (then search takes the path that skips them).
#: SQLite's clock (ms, like ours): it binds nothing, its text stays constant; it decides
#: only a search's shape, exact either way but for a fact expiring in that millisecond.
_CLOCK = "(julianday('now') - 2440587.5) * 86400000.0"
ANY_EXPIRED = f"SELECT 1 FROM facts WHERE expires_at <= {_CLOCK} LIMIT 1"
#: The same for valid time: any fact superseded by now, or valid only later (two probes
#: of partial indexes holding only such facts).
ANY_INVALID = (
    f"SELECT 1 WHERE EXISTS (SELECT 1 FROM facts WHERE valid_to <= {_CLOCK})"
    f" OR EXISTS (SELECT 1 FROM facts WHERE valid_from > {_CLOCK})"
)
#: Both in one statement (one row, 1 or 0): what every search reads first.
ANY_HIDDEN = (
    f"SELECT EXISTS (SELECT 1 FROM facts WHERE expires_at <= {_CLOCK})"
    f" OR EXISTS (SELECT 1 FROM facts WHERE valid_to <= {_CLOCK})"
    f" OR EXISTS (SELECT 1 FROM facts WHERE valid_from > {_CLOCK})"
)
#: expire(): the delete triggers remove the index entries, fact_tags rows cascade.
#: The three deletes return a row per fact deleted (the count).
EXPIRE = "DELETE FROM facts WHERE expires_at <= :now RETURNING 1"
DELETE_ONE = "DELETE FROM facts WHERE id = :id RETURNING 1"
# One statement for any number of ids: they arrive as a bound JSON array.
DELETE_MANY = "DELETE FROM facts WHERE id IN (SELECT value FROM json_each(:ids)) RETURNING 1"
TAGS = (
    f"SELECT tag, count(*) FROM fact_tags WHERE fact_pk NOT IN ({HIDDEN}) GROUP BY tag ORDER BY tag"
)
CATEGORIES = (
    "SELECT DISTINCT category FROM facts"
    f" WHERE category <> '' AND pk NOT IN ({HIDDEN}) ORDER BY category"
)

#: Rows per multi-row upsert: 19 parameters each, far below SQLite's 32766 limit, large
#: enough that FTS5 flushes its pending terms rarely (it flushes once per statement).
UPSERT_CHUNK = 1000

_TAGS = (
    "(SELECT count(*) FROM fact_tags AS t WHERE t.fact_pk = f.pk"
    " AND +t.tag IN (SELECT value FROM json_each(:tags))) = :ntags"
)
_CATEGORY = "(f.category = :cat OR (f.category >= :cat_lo AND f.category < :cat_hi))"
_SOURCE = "f.source = :source"
_SINCE = "f.created_at >= :since"
_UNTIL = "f.created_at <= :until"
# Typed JSON equality of `have` (the fact's value) and `want` (json_each rows of both).
_EQUAL = """have.type = want.type AND CASE
                WHEN want.type IN ('object', 'array') THEN
                    (SELECT count(*) FROM json_tree(have.value))
                        = (SELECT count(*) FROM json_tree(want.value))
                    AND NOT EXISTS (
                        SELECT 1 FROM json_tree(want.value) AS a
                        WHERE NOT EXISTS (
                            SELECT 1 FROM json_tree(have.value) AS b
                            WHERE b.fullkey = a.fullkey AND b.type = a.type
                                AND b.atom IS a.atom))
                ELSE have.atom IS want.atom
            END"""
# An ordering operator compares numbers with numbers and text with text, nothing else.
_SAME_KIND = """CASE json_type(c.value, '$[2]') WHEN 'text' THEN have.type = 'text'
                ELSE have.type IN ('integer', 'real') END"""
# Equalities (0.1's filter, the common case) are one bound JSON object: its own cheap
# NOT EXISTS, 40% faster than the general conditions on a scan. The operators follow.
_METADATA = f"""NOT EXISTS (
    SELECT 1 FROM json_each(:meta) AS want
    WHERE NOT EXISTS (
        SELECT 1 FROM json_each(f.metadata) AS have
        WHERE have.key = want.key AND {_EQUAL}))
AND NOT EXISTS (
    SELECT 1 FROM json_each(:mops) AS c
    WHERE NOT coalesce((
        SELECT CASE c.value ->> 1
            WHEN 'in' THEN EXISTS (
                SELECT 1 FROM json_each(c.value, '$[2]') AS want WHERE {_EQUAL})
            WHEN 'nin' THEN NOT EXISTS (
                SELECT 1 FROM json_each(c.value, '$[2]') AS want WHERE {_EQUAL})
            WHEN 'has' THEN 1
            WHEN 'gt' THEN {_SAME_KIND} AND have.atom > c.value ->> 2
            WHEN 'gte' THEN {_SAME_KIND} AND have.atom >= c.value ->> 2
            WHEN 'lt' THEN {_SAME_KIND} AND have.atom < c.value ->> 2
            WHEN 'lte' THEN {_SAME_KIND} AND have.atom <= c.value ->> 2
            ELSE 0
        END
        FROM json_each(f.metadata) AS have WHERE have.key = c.value ->> 0
    ), c.value ->> 1 IN ('nin', 'lacks')))"""

# The usual filter of `search_by_metadata` (and of `list(metadata=...)`): one key equal to
# a scalar. The fact's value is read through the key's path (`:mpath`, `$."key"`, built
# by `facts.scalar_equality` only for keys a quoted path spells) and compared with the
# wanted value as SQLite parses its JSON text (`:mvalue`): the atom, then (on the few
# rows with an equal atom) the JSON type, so true/1/"1" differ exactly as in the general
# predicate. A path lookup in a parse SQLite caches costs far less per row than the
# json_each walk: the newest 10 of 1,000 matches in 50,000 facts went from 3.8x raw apsw
# to ~1.8x for the whole call (benchmarks/metadata_equality.py).
METADATA_SCALAR = (
    "json_extract(f.metadata, :mpath) IS json_extract(:mvalue, '$')"
    " AND json_type(f.metadata, :mpath) = json_type(:mvalue)"
)
# Which wanted tag drives a tag-filtered list: the one fewest facts hold (each counted in
# fact_tags' primary key; an absent tag counts 0 and ends the list at once).
RAREST_TAG = """d.tag = (SELECT w.value FROM json_each(:tags) AS w
    ORDER BY (SELECT count(*) FROM fact_tags AS n WHERE n.tag = w.value) LIMIT 1)"""

# Memory-item filters (rules/items.py, ItemFilters.key: after Filters.key's).
_LAYER = "f.layer IN (SELECT value FROM json_each(:layers))"
_KIND = "f.kind = :kind"
_MIN_CONFIDENCE = "f.confidence >= :min_confidence"

#: The filters' predicates, in `Filters.key` order.
PREDICATES = (_TAGS, _CATEGORY, _SOURCE, _SINCE, _UNTIL, _METADATA)
_ITEM_PREDICATES = (_LAYER, _KIND, _MIN_CONFIDENCE, VALID_AT)

# The same tests on a row that search reaches by its primary key (FTS5 drives, see
# search_sql). The unary `+` keeps the planner from weighing facts' indexes for them:
# a comparison of an indexed column with a bound value makes SQLite (built with STAT4)
# re-prepare the statement each time that value is bound, which cost every filtered
# search a full prepare (~100 µs with a metadata filter: W3m category 3.9x raw -> ~1x).
_SEARCH_PREDICATES = (
    _TAGS,
    "(+f.category = :cat OR (+f.category >= :cat_lo AND +f.category < :cat_hi))",
    "+f.source = :source",
    "+f.created_at >= :since",
    "+f.created_at <= :until",
    _METADATA,
)

FilterKey = tuple[bool, bool, bool, bool, bool, bool]
#: ItemFilters.key: which of the memory-item predicates are present.
ItemKey = tuple[bool, bool, bool, bool]
NO_ITEM_KEY: ItemKey = (False, False, False, False)


def where_clauses(
    key: FilterKey,
    item_key: tuple[bool, ...] = NO_ITEM_KEY,
    predicates: tuple[str, ...] = PREDICATES,
) -> list[str]:
    # item keys of 0.2 callers have three flags: no `as_of` (zip stops at the shorter)
    return [sql for present, sql in zip(key, predicates, strict=True) if present] + [
        sql for present, sql in zip(item_key, _ITEM_PREDICATES, strict=False) if present
    ]


# -- mode "any" on large stores (sqlmem.sqlite.stores.fts_any) ------------------------------

#: The shortcut's SQL over facts_fts; the ranked subquery yields (pk, score).
ANY = any_queries(
    FACTS_FTS,
    f"SELECT {_COLUMNS}, r.score FROM ({{ranked}}) AS r JOIN facts AS f ON f.pk = r.pk"
    " ORDER BY r.score",
)
_AVERAGES = ANY.averages  # with ANY_HIDDEN: the row count mode "any" plans by
ANY_HIDDEN_AND_AVERAGES = f"{ANY_HIDDEN}, ({_AVERAGES})"


@cache
def search_sql(key: FilterKey, item_key: tuple[bool, ...] = NO_ITEM_KEY) -> str:
    """Ranked search. Both shapes are driven by the FTS index (see facts.py).

    Without filters, the FTS subquery sorts its matches by `bm25()` in SQLite's sorter,
    keeps the best `:limit`, and only those facts rows are read. This is the shortcut's
    exact query too (`ANY.bm25`): FTS5's own `ORDER BY rank` measured ~1.5x slower for
    OR queries and ~1.1x for AND on 100,000 facts (p50; p99 ~1.7x), because its sorted
    mode prepares and runs an inner statement per query. With filters, FTS5 yields rows
    in rank order (it consumes the ORDER BY) and the join checks each candidate until
    `:limit` pass; CROSS JOIN pins facts_fts as the outer loop whatever statistics
    ANALYZE collects.

    `LIMIT +:limit`, not `LIMIT :limit`: with a bare parameter SQLite marks the statement
    to be re-prepared whenever the limit is bound (it offers a LIMIT to the virtual
    table, and a plan that depends on a bound value expires with it), so every filtered
    search paid a full prepare: ~15 µs for a tag filter, ~100 µs with a metadata filter,
    whose SQL is long (measured: 117 -> 12 µs for a search matching nothing).
    The unary `+` makes it an expression: same value, no re-prepare.
    """
    if not any(key) and not any(item_key):
        return ANY.bm25
    return search_live_sql(key, item_key)


@cache
def search_live_sql(key: FilterKey, item_key: tuple[bool, ...] = NO_ITEM_KEY) -> str:
    """The filtered shape, expired facts skipped: every filtered search, and an
    unfiltered one while expired facts are stored (`ANY_EXPIRED`; `expire()` and vacuum
    delete them). Needs `:now`."""
    where = [*where_clauses(key, item_key, _SEARCH_PREDICATES), live_test(item_key, searched=True)]
    return (
        f"SELECT {_COLUMNS}, {FACTS_FTS}.rank"
        f" FROM {FACTS_FTS} CROSS JOIN facts AS f ON f.pk = {FACTS_FTS}.rowid"
        f" WHERE {FACTS_FTS} MATCH :query AND "
        + " AND ".join(where)
        + f" ORDER BY {FACTS_FTS}.rank LIMIT +:limit"
    )


_UPSERT_HEAD = (
    "INSERT INTO facts (id, content, source, category, tags, metadata, created_at, updated_at,"
    " search_text, layer, kind, confidence, salience, refs, expires_at, fingerprint, hits,"
    " key, valid_from) VALUES "
)
_ROW = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


@lru_cache(maxsize=64)
def upsert_sql(rows: int, *, keep_created: bool, keep_hits: bool = True) -> str:
    """Insert or update `rows` facts in one statement (never REPLACE, see the schema).

    DO UPDATE fires the facts_update_* triggers, which delete the old FTS entry with the
    old text before adding the new one, so an updated fact's old words never match again.
    `keep_created` keeps the first insert's created_at (the caller gave none);
    `keep_hits` a stored fact's hits (`index`; import restores them). A stored fact's
    chain links are left to `sqlite.chains` (a valid_from not given is kept).
    """
    created = "" if keep_created else " created_at = excluded.created_at,"
    hits = "" if keep_hits else ", hits = excluded.hits"
    return (
        _UPSERT_HEAD
        + ", ".join([_ROW] * rows)
        + " ON CONFLICT (id) DO UPDATE SET content = excluded.content,"
        " source = excluded.source, category = excluded.category, tags = excluded.tags,"
        " metadata = excluded.metadata," + created + " updated_at = excluded.updated_at,"
        " search_text = excluded.search_text, layer = excluded.layer, kind = excluded.kind,"
        " confidence = excluded.confidence, salience = excluded.salience,"
        " refs = excluded.refs, expires_at = excluded.expires_at,"
        " fingerprint = excluded.fingerprint, key = excluded.key,"
        " valid_from = coalesce(excluded.valid_from, valid_from)" + hits
    )


# -- export and import (sqlite/export.py, sqlite/importer.py) -------------------------------

# Export pages by pk, oldest row first; expired facts are not exported.
EXPORT_FACTS_PAGE = f"""
SELECT f.pk, {_COLUMNS}
FROM facts AS f WHERE f.pk > :after AND {UNEXPIRED} ORDER BY f.pk LIMIT :limit
"""
# What an imported record is compared with (the stored values, in upsert's encoding).
IMPORT_STORED_FACT = (
    "SELECT content, source, category, tags, metadata, layer, kind, confidence, salience,"
    " refs, expires_at, hits, created_at, key, valid_from, updated_at FROM facts WHERE id = ?"
)

# -- memory items (sqlite/items.py) -----------------------------------------------------------

ID_EXISTS = "SELECT 1 FROM facts WHERE id = ?"
#: How many leading hex digits of a fingerprint facts_fingerprint keeps (migration 0013).
FINGERPRINT_PREFIX = 8
#: The key of facts_fingerprint: the fingerprint's first FINGERPRINT_PREFIX hex digits.
FINGERPRINT_KEY = f"substr(fingerprint, 1, {FINGERPRINT_PREFIX})"
#: remember's lookup: the live facts of the layer with the fingerprint, oldest first
#: (facts_fingerprint finds the rows sharing the prefix; the whole fingerprint and the
#: layer are compared on them, and they are sorted); the caller keeps the first of the
#: new fact's key (a text repeated under several keys is rare: a handful of rows).
REMEMBER_FIND = f"""
SELECT f.pk, f.id, f.tags, f.refs, f.metadata, f.confidence, f.salience, f.expires_at, f.key
FROM facts AS f WHERE {FINGERPRINT_KEY} = substr(:fingerprint, 1, {FINGERPRINT_PREFIX})
    AND f.fingerprint = :fingerprint AND f.layer = :layer AND {LIVE}
ORDER BY f.created_at, f.pk
"""
REMEMBER_MERGE = (
    "UPDATE facts SET tags = ?, refs = ?, metadata = ?, confidence = ?, salience = ?,"
    " expires_at = ?, hits = hits + 1, updated_at = ? WHERE pk = ?"
)
PROMOTE = (
    "UPDATE facts AS f SET layer = :layer, updated_at = :updated"
    f" WHERE f.id = :id AND f.layer <> :layer AND {UNEXPIRED}"
)
PROMOTE_ELIGIBLE = (
    "UPDATE facts AS f SET layer = :to_layer, updated_at = :now"
    " WHERE f.layer = :from_layer AND f.confidence >= :min_confidence"
    f" AND f.hits >= :min_hits AND {LIVE} RETURNING id, created_at, pk, key"
)
#: Rows the open hook fills (facts_fingerprint finds them: only '' has an empty prefix).
ANY_UNFINGERPRINTED = f"SELECT 1 FROM facts WHERE {FINGERPRINT_KEY} = '' LIMIT 1"
UNFINGERPRINTED = f"SELECT pk, content FROM facts WHERE {FINGERPRINT_KEY} = '' LIMIT ?"
SET_FINGERPRINT = "UPDATE facts SET fingerprint = ? WHERE pk = ?"

# -- facts that change (sqlite/chains.py; the rules in rules/chains.py) -----------------------

_CHAIN_ORDER = "ORDER BY coalesce(f.valid_from, f.created_at), f.pk"
#: history(key=...): the key's facts of every layer, oldest first (facts_chain).
HISTORY_BY_KEY = (
    f"SELECT {_COLUMNS} FROM facts AS f WHERE f.chain = :key AND {UNEXPIRED} {_CHAIN_ORDER}"
)
#: history(id=...): the fact's chain (its chain and layer read first), or the fact alone.
CHAIN_OF = "SELECT chain, layer FROM facts WHERE id = :id"
HISTORY_OF_CHAIN = (
    f"SELECT {_COLUMNS} FROM facts AS f WHERE f.chain = :chain AND f.layer = :layer"
    f" AND {UNEXPIRED} {_CHAIN_ORDER}"
)
