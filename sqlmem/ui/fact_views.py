"""The facts pages' data: filtered pages of facts, a fact's supersession chain, valid time.

Facts change: a fact with a key is one link of its slot's chain, live until the next link
supersedes it, and a fact with an expiry is gone for the agent once it passes (stored
until `expire()` deletes it). The stores' reads show what is live now; the inspector
reaches the rest the ways the stores offer: a key's whole chain
(`facts.history(key=...)`), a fact's own chain (`history(id=...)`), the facts valid at an
earlier moment (`list(as_of=...)`), and the facts superseded, expired, or all of them
(`list(state=...)`), each a page read by the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from ..errors import InvalidArgumentError
from ..protocols import Database, FactState
from ..records import Fact
from ..rules.chains import FACT_STATES
from .paging import PAGE_SIZE, Page, paged

__all__ = [
    "SAME_MOMENT_LIMIT",
    "SCAN_SIZE",
    "STATES",
    "Cursor",
    "FactChain",
    "FactFilters",
    "expired_fact",
    "fact_chain",
    "fact_page",
    "is_expired",
    "is_superseded",
    "parse_moment",
    "parse_state",
]

#: Facts of a state looked at per page, at most, when only those of one key are shown
#: (expired ones, or all, which a key's chain does not hold): bounded work per request
#: however rare they are (the next page looks on).
SCAN_SIZE = 200

#: The facts page's "show" choices besides the default (live now; for a key, its chain).
STATES: tuple[FactState, ...] = tuple(s for s in FACT_STATES if s != "live")


@dataclass(frozen=True)
class FactFilters:
    """The facts page's filters. `key` shows that slot's chains (superseded links too);
    `as_of` the facts valid at that moment; `state` only the facts superseded now,
    expired (not yet deleted), or every stored fact (None: live ones, or a key's chain)."""

    layer: str | None = None
    kind: str | None = None
    tags: list[str] = field(default_factory=list)
    category: str | None = None
    min_confidence: float | None = None
    key: str | None = None
    as_of: datetime | None = None
    state: FactState | None = None

    def params(self) -> dict[str, Any]:
        """The filters as the page's query parameters (for the pager's links)."""
        return {
            "layer": self.layer,
            "kind": self.kind,
            "tags": ",".join(self.tags),
            "category": self.category,
            "min_confidence": self.min_confidence,
            "key": self.key,
            "as_of": None if self.as_of is None else self.as_of.strftime("%Y-%m-%d %H:%M:%S"),
            "state": self.state,
        }

    def accepts(self, fact: Fact) -> bool:
        """The filters tested on one fact (a key's chain is filtered here, not in SQL)."""
        return (
            (self.layer is None or fact.layer == self.layer)
            and (self.kind is None or fact.kind == self.kind)
            and all(tag in fact.tags for tag in self.tags)
            and (self.category is None or fact.category == self.category)
            and (self.min_confidence is None or fact.confidence >= self.min_confidence)
            and (self.as_of is None or _valid_at(fact, self.as_of))
            and (self.state != "superseded" or is_superseded(fact))
        )


def parse_moment(text: str, what: str = "'valid at'") -> datetime | None:
    """A moment typed into a filter ("2026-11-27", "2026-11-27 14:30", ISO 8601), in UTC
    (read as UTC when it names no zone, so the pager's links, which carry it without
    one, name the same moment); None for an empty text."""
    text = text.strip()
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgumentError(
            f"{what} must be a date or time such as 2026-11-27 or 2026-11-27 14:30"
        ) from None
    return moment.astimezone(timezone.utc) if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def parse_state(text: str) -> FactState | None:
    """The "show" filter: "" (live now, or a key's chain) or one of `STATES`."""
    if not text:
        return None
    for state in STATES:
        if text == state:
            return state
    raise InvalidArgumentError(f"show must be one of {', '.join(STATES)}, or nothing")


@dataclass(frozen=True)
class Cursor:
    """Where a page of facts starts, newest first: after the facts created later than
    `until` and the first `skip` of those created at `until` (a batch shares one
    creation time). Read through `list(until=...)`, a walk of the creation-time index
    from there: a page deep in the list costs what the first one costs, where an offset
    reads every row it skips."""

    until: datetime
    skip: int


def fact_page(
    db: Database,
    filters: FactFilters,
    offset: int,
    size: int = PAGE_SIZE,
    cursor: Cursor | None = None,
) -> Page[Fact]:
    """A page of facts: a key's chains (oldest first), or the facts of a state (live by
    default), now or valid at `as_of` (newest first, filtered and paged by the store;
    from `cursor` when given, `offset` then only numbering the rows). Its next page is
    read by cursor."""
    if filters.key:
        if filters.state in ("expired", "all"):  # a key's chain holds no expired fact
            return _scan_for_key(db, filters, offset)
        chain = [f for f in db.facts.history(key=filters.key) if filters.accepts(f)]
        return paged(chain[offset : offset + size + 1], offset, size)
    if cursor is None:
        rows = _list(db, filters, size + 1, offset)
    else:
        rows = _list(db, filters, size + 1, cursor.skip, until=cursor.until)
    page = paged(rows, offset, size)
    if not page.has_next:
        return page
    return replace(page, next_params=_next(page.rows, page.next_offset, cursor))


def _next(rows: list[Fact], offset: int, cursor: Cursor | None) -> dict[str, Any]:
    """The query of the page after `rows`: the cursor at its last fact's creation time."""
    last = rows[-1].created_at
    assert last is not None  # every stored fact has one
    skip = sum(1 for fact in rows if fact.created_at == last)
    if cursor is not None and _aware(last) == cursor.until:
        skip += cursor.skip  # the page began inside this creation time
    until = _aware(last).strftime("%Y-%m-%d %H:%M:%S.%f")
    return {"until": until, "skip": skip, "offset": offset}


def _list(
    db: Database, filters: FactFilters, limit: int, offset: int, until: datetime | None = None
) -> list[Fact]:
    return db.facts.list(
        until=until,
        tags=filters.tags or None,
        category=filters.category,
        layer=filters.layer,
        kind=filters.kind,
        min_confidence=filters.min_confidence,
        as_of=filters.as_of,
        limit=limit,
        offset=offset,
        state=filters.state or "live",
    )


def _scan_for_key(db: Database, filters: FactFilters, offset: int) -> Page[Fact]:
    """The facts of one key among the next SCAN_SIZE of the state (no read selects a
    key), up to a page of them: the next page looks on from the first fact not looked at."""
    looked = _list(db, filters, SCAN_SIZE + 1, offset)
    rows: list[Fact] = []
    scanned = 0
    for fact in looked[:SCAN_SIZE]:
        if len(rows) == PAGE_SIZE:
            break
        scanned += 1
        if fact.key == filters.key:
            rows.append(fact)
    more = scanned < len(looked)
    return Page(rows, offset, more, max(1, scanned), scanned=scanned)


#: Expired facts created in one millisecond looked at, at most, to find one by its id
#: (a batch written at once shares its creation time).
SAME_MOMENT_LIMIT = 10_000


def expired_fact(db: Database, fact_id: str, created: datetime) -> Fact | None:
    """An expired fact (which `get` no longer returns) found by its id and creation
    time: among the expired facts created in that millisecond, read a page at a time
    (usually one short read)."""
    for offset in range(0, SAME_MOMENT_LIMIT, SCAN_SIZE):
        same_moment = db.facts.list(
            since=created, until=created, state="expired", limit=SCAN_SIZE, offset=offset
        )
        found = next((f for f in same_moment if f.id == fact_id), None)
        if found is not None or len(same_moment) < SCAN_SIZE:
            return found
    return None


@dataclass(frozen=True)
class FactChain:
    """A fact's chain, oldest first, with where the fact is in it."""

    links: list[Fact]
    position: int  # index of the fact in `links`

    @property
    def previous(self) -> Fact | None:
        """The fact this one superseded."""
        return self.links[self.position - 1] if self.position > 0 else None

    @property
    def following(self) -> Fact | None:
        """The fact that superseded this one."""
        return self.links[self.position + 1] if self.position + 1 < len(self.links) else None


def fact_chain(db: Database, fact: Fact) -> FactChain:
    """The chain `fact` belongs to (a fact without a key is a chain of one)."""
    links = db.facts.history(id=fact.id) if fact.key else []
    ids = [f.id for f in links]
    if fact.id not in ids:
        return FactChain([fact], 0)
    return FactChain(links, ids.index(fact.id))


def is_superseded(fact: Fact, now: datetime | None = None) -> bool:
    """Whether a later fact of its chain has taken over by now."""
    return fact.valid_to is not None and _aware(fact.valid_to) <= (now or _now())


def is_expired(fact: Fact, now: datetime | None = None) -> bool:
    """Whether the fact's expiry has passed (an expired fact stays until `expire()`)."""
    return fact.expires_at is not None and _aware(fact.expires_at) <= (now or _now())


def _valid_at(fact: Fact, moment: datetime) -> bool:
    start = fact.valid_from or fact.created_at
    if start is not None and _aware(start) > moment:
        return False
    return fact.valid_to is None or moment < _aware(fact.valid_to)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _now() -> datetime:
    return datetime.now(timezone.utc)
