"""SQL text of a fact listing (`list`, `search_by_metadata`): newest first and paged, or
oldest first and whole; live facts, or the superseded, expired or all stored ones; and a
page `as_of` a time, read in bounded parts. The predicates are the fact store's
(`facts_sql`); each shape is cached, so a call shape always sends the same text."""

from __future__ import annotations

from functools import cache

from ...rules.chains import FactState
from .facts_sql import (
    COLUMNS,
    METADATA_SCALAR,
    NO_ITEM_KEY,
    PREDICATES,
    RAREST_TAG,
    UNEXPIRED,
    FilterKey,
    live_test,
    where_clauses,
)

__all__ = ["VALID_AT_WINDOW", "list_sql", "valid_at_shape"]


#: `list(state=...)`: the stored facts each state shows besides the live ones (read now;
#: `rules.chains.in_state`). The partial indexes facts_valid_to and facts_expires hold
#: exactly the candidates of the first two.
_STATE_TESTS = {
    "superseded": f"{UNEXPIRED} AND f.valid_to <= :now",
    "expired": "f.expires_at <= :now",
    "all": "",
}
#: The same tests in a page `as_of` a time: the valid-time parts drive it (`+`), the
#: expired facts (a few, until `expire()`) their index.
_STATE_TESTS_AS_OF = _STATE_TESTS | {"superseded": f"{UNEXPIRED} AND +f.valid_to <= :now"}

#: How many of the newest facts a page `as_of` a time looks at first (`window=True`).
VALID_AT_WINDOW = 2000


@cache
def list_sql(
    key: FilterKey,
    item_key: tuple[bool, ...] = NO_ITEM_KEY,
    *,
    oldest_first: bool = False,
    limited: bool = True,
    scalar: bool = False,
    state: FactState = "live",
    window: bool = False,
) -> str:
    """Browsing (newest first, paged) and metadata lookup (oldest first, all rows).

    pk breaks ties between equal timestamps: insertion order, like the in-memory twin.
    Expired facts are skipped (needs `:now`), and superseded ones unless `state` asks
    for them.

    With tags and a metadata filter, the facts holding the rarest wanted tag are the
    candidates (one seek into fact_tags' primary key), then sorted: the cost is that
    tag's size, never the table's, where each row read costs JSON parsing (no
    scan of facts when a tag or category is given). Tags alone keep 0.1's plan, a walk
    down facts_created_at that stops after `limit` passing rows: cheap per row, and
    immediate for a tag most facts hold (tests/unit/test_many_tags.py pins its work). A
    category is driven by its index (facts_category) either way. `scalar`: the metadata
    filter is `facts.scalar_equality`'s (params `mpath`, `mvalue`, not `meta`, `mops`).

    A page `as_of` a time (`valid_at_shape`) is read by `_valid_at_window` (with
    `window`) or `_valid_at_page`, never by a walk down the whole table.
    """
    predicates = (*PREDICATES[:-1], METADATA_SCALAR) if scalar else PREDICATES
    page_as_of = valid_at_shape(key, item_key, oldest_first=oldest_first, limited=limited)
    tests = _STATE_TESTS_AS_OF if page_as_of else _STATE_TESTS
    visible = live_test(item_key) if state == "live" else tests[state]
    where = [*where_clauses(key, item_key, predicates), *([visible] if visible else [])]
    sql = f"SELECT {COLUMNS} FROM facts AS f"
    if key[0] and key[5]:  # tags and metadata: the rarest wanted tag's facts drive
        sql = f"SELECT {COLUMNS} FROM fact_tags AS d CROSS JOIN facts AS f ON f.pk = d.fact_pk"
        where = [RAREST_TAG, *where]
    if page_as_of:
        return _valid_at_window(where) if window else _valid_at_page(where)
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += (
        " ORDER BY f.created_at, f.pk" if oldest_first else " ORDER BY f.created_at DESC, f.pk DESC"
    )
    if not limited:
        return sql
    if state == "live":
        return sql + " LIMIT :limit OFFSET :offset"
    # superseded or expired facts come from their partial index, unordered: their keys
    # are sorted, and only the page's rows read whole
    keys = sql.replace(f"SELECT {COLUMNS}", "SELECT f.pk", 1)
    return (
        f"SELECT {COLUMNS} FROM facts AS f WHERE f.pk IN ({keys} LIMIT :limit + :offset)"
        " ORDER BY f.created_at DESC, f.pk DESC LIMIT :limit OFFSET :offset"
    )


def valid_at_shape(
    key: FilterKey, item_key: tuple[bool, ...], *, oldest_first: bool, limited: bool
) -> bool:
    """Whether a listing is a page `as_of` a time, newest first, read in the shapes
    below (with tags and a metadata filter, the rarest tag drives it as any listing)."""
    as_of = len(item_key) > 3 and item_key[3]
    return bool(as_of) and limited and not oldest_first and not (key[0] and key[5])


def _valid_at_window(where: list[str]) -> str:
    """The page among the newest `:window` facts only: the answer when they hold a whole
    page (`limit` rows at `offset`), since every fact outside is older than each of
    them. The usual case for a recent moment: the newest facts are valid then."""
    return (
        f"SELECT {COLUMNS} FROM (SELECT * FROM facts"
        " ORDER BY created_at DESC, pk DESC LIMIT :window) AS f"
        f" WHERE {' AND '.join(where)}"
        " ORDER BY f.created_at DESC, f.pk DESC LIMIT :limit OFFSET :offset"
    )


def _valid_at_page(where: list[str]) -> str:
    """A page of the facts valid at `:at`, newest first, read in two bounded parts.

    A fact valid at `:at` began by then: created by then, or created later with a
    `valid_from` backdated to it. The first part walks facts_created_at down from `:at`
    and stops after `limit + offset` passing rows; the second reads the backdated facts
    from facts_valid_from (which holds only facts with an explicit valid_from) up to
    `:at`. Walking newest first from now instead read every fact created since `:at`
    before the first one valid then: most of the file for a moment long ago. The unary
    `+` keeps the second part on facts_valid_from; both parts sort primary keys only,
    and the page's rows are read last (half the time of sorting whole rows).
    """
    ordered = " ORDER BY f.created_at DESC, f.pk DESC LIMIT :limit + :offset"
    began = " AND ".join([*where, "f.created_at <= :at"])
    backdated = " AND ".join([*where, "f.valid_from <= :at", "+f.created_at > :at"])
    return (
        f"SELECT {COLUMNS} FROM facts AS f WHERE f.pk IN ("
        f"SELECT pk FROM (SELECT f.pk FROM facts AS f WHERE {began}{ordered})"
        f" UNION ALL SELECT pk FROM (SELECT f.pk FROM facts AS f WHERE {backdated}"
        " ORDER BY +f.created_at DESC, f.pk DESC LIMIT :limit + :offset)"
        ") ORDER BY f.created_at DESC, f.pk DESC LIMIT :limit OFFSET :offset"
    )
