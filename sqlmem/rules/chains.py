"""Facts that change: the rules of keys, chains and valid time, written once for every
backend (the SQLite store, PostgreSQL and the in-memory twin only execute them).

A chain is the facts of one slot: the facts with one `key` in one layer, or, for facts
without a key, the facts linked by `supersede` (their chain is named after the first
fact's id, `"#<id>"`, which no key can spell). A chain is ordered by `valid_from`, ties
by write order (the later write wins); each fact's `valid_to` is the next one's
`valid_from` and its `superseded_by` the next one's id; the last is live. Placing a fact
touches two rows only: the fact itself and the one before it.

Valid time: a fact is live at T when `valid_from <= T < valid_to` (no `valid_to`:
forever). A fact written without `valid_from` and outside any chain is valid from its
`created_at` for reads `as_of` a time; reads of now take it as valid (its `created_at`
is the caller's record timestamp, which 0.2 programs set freely, also in the future).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from ..errors import InvalidArgumentError
from .encoding import dt_to_ms

if TYPE_CHECKING:  # records import this module, and protocols import records
    from ..protocols import FactState

__all__ = [
    "FACT_STATES",
    "MAX_KEY_LEN",
    "Link",
    "Placement",
    "chain_name",
    "check_as_of",
    "check_key",
    "check_state",
    "in_state",
    "is_valid",
    "order_chain",
    "place",
    "supersede_valid_from",
]

MAX_KEY_LEN = 128
_KEY = re.compile(rf"[A-Za-z0-9._:-]{{0,{MAX_KEY_LEN}}}")
#: The first character of an unkeyed chain's name (no key holds it).
UNKEYED_CHAIN = "#"


def check_key(value: str) -> str:
    """A key is '' (no slot) or up to 128 letters, digits, '.', '-', '_' and ':'."""
    if not isinstance(value, str) or not _KEY.fullmatch(value):
        raise ValueError(
            f"key must be at most {MAX_KEY_LEN} letters, digits, '.', '-', '_' and ':'; "
            f"got {value!r:.80}"
        )
    return value


def chain_name(key: str, first_id: str) -> str:
    """The chain a fact joins: its key's, or for a fact without a key the chain named
    after the first fact of the supersession (`first_id`)."""
    return key if key else UNKEYED_CHAIN + first_id


def check_as_of(value: object) -> int | None:
    """`as_of=` of `search` and `list`: None (now) or a timezone-aware datetime, as ms."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidArgumentError("as_of must be a datetime or None")
    if value.tzinfo is None:
        raise InvalidArgumentError("as_of must be timezone-aware (e.g. datetime.now(UTC))")
    return dt_to_ms(value)


class Link(NamedTuple):
    """One chain member: its id, effective valid_from (ms) and write order."""

    id: str
    valid_from: int
    order: int


@dataclass(frozen=True)
class Placement:
    """Where a fact goes in its chain: the member before it (whose `valid_to` and
    `superseded_by` become the fact's `valid_from` and id) and the one after it (whose
    `valid_from` and id become the fact's `valid_to` and `superseded_by`)."""

    previous: Link | None
    following: Link | None


def order_chain(members: Sequence[Link]) -> list[Link]:
    """A chain in its order: valid_from, then write order."""
    return sorted(members, key=lambda m: (m.valid_from, m.order))


def place(members: Sequence[Link], fact: Link) -> Placement:
    """The place of `fact` among `members` (the chain without it). Equal valid_from: the
    later write (larger order) comes later, so it is the live one."""
    previous: Link | None = None
    following: Link | None = None
    for member in order_chain(members):
        if (member.valid_from, member.order) <= (fact.valid_from, fact.order):
            previous = member
        elif following is None:
            following = member
    return Placement(previous, following)


def supersede_valid_from(given_ms: int | None, old_valid_from: int, now: int) -> int:
    """`supersede(old, fact)`: the new fact is valid from its own valid_from, or now, and
    never before the fact it replaces (so it lands after it)."""
    return max(now if given_ms is None else given_ms, old_valid_from)


def is_valid(
    explicit_from: int | None, created: int, valid_to: int | None, at: int, *, as_of: bool
) -> bool:
    """The valid-time test every backend applies (see the module docstring): at `at` (now,
    or the `as_of` time)."""
    if valid_to is not None and valid_to <= at:
        return False
    if explicit_from is not None:
        return explicit_from <= at
    return created <= at if as_of else True


#: `list(state=...)`'s values, in the order an inspector offers them.
FACT_STATES: tuple[FactState, ...] = ("live", "superseded", "expired", "all")


def check_state(value: object) -> FactState:
    """`state=` of `list`: which stored facts a listing shows (see `in_state`)."""
    if value not in FACT_STATES:
        raise InvalidArgumentError(
            f"state must be one of {', '.join(FACT_STATES)}; got {value!r:.80}"
        )
    return value


def in_state(
    state: FactState,
    expires_ms: int | None,
    explicit_from: int | None,
    created: int,
    valid_to: int | None,
    now: int,
    as_of: int | None,
) -> bool:
    """Whether a stored fact belongs to a `list(state=..., as_of=...)`, the test every
    backend applies. A fact's state is read now: expired once its `expires_at` has passed
    (until `expire()` deletes it), superseded once a later fact of its chain has taken
    over, live when neither and valid now. "live" is what every other read shows;
    "superseded" and "expired" show what the agent no longer sees, for an inspector;
    "all" shows every stored fact. `as_of` keeps, in any state, the facts valid at that
    time (for "live": instead of valid now, as every read `as_of` a time)."""
    unexpired = expires_ms is None or expires_ms > now
    if state == "live":
        at = now if as_of is None else as_of
        return unexpired and is_valid(explicit_from, created, valid_to, at, as_of=as_of is not None)
    if state == "superseded" and not (unexpired and valid_to is not None and valid_to <= now):
        return False
    if state == "expired" and unexpired:
        return False
    return as_of is None or is_valid(explicit_from, created, valid_to, as_of, as_of=True)
