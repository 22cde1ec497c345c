"""Whether an imported fact replaces the stored fact of its id: the merge rule of every
backend's import, written once.

Of the stored fact and the file's records of one id, the one with the latest `updated_at`
wins; on a tie the later record, the file counting as coming after what the target holds.
So a tie with the stored fact writes only when the values differ, and importing a file a
second time writes nothing. An older export never rolls back a newer fact. A record
without `updated_at` is older than any dated one: it only fills an id nothing else gives,
or replaces what an undated record of the same import stored (such a fact is stored with
the time it was written, so its own date says nothing).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..records import Fact
from .encoding import dt_to_ms
from .filters import FactRow, prepare_fact

__all__ = ["COMPARED", "StoredFact", "beats_stored", "stored_fact_of"]

#: The stored values a record must equal (in `FactRow`'s encoding) to leave a fact of the
#: same `updated_at` alone, in this order; `created_at` and `valid_from` are compared only
#: when the record gives them (absent, the store keeps its own).
COMPARED = ("content", "source", "category", "tags", "metadata", "layer", "kind",
            "confidence", "salience", "refs", "expires_ms", "hits")  # fmt: skip


class StoredFact(NamedTuple):
    """What the rule needs of the stored fact of an id, as the backend read it."""

    values: tuple[Any, ...]  # COMPARED's values, in its order
    created_ms: int
    key: str | None
    valid_from_ms: int | None
    updated_ms: int


def stored_fact_of(row: FactRow) -> StoredFact:
    """A `StoredFact` from a stored fact read back as a record and prepared again."""
    assert row.created_ms is not None and row.updated_ms is not None  # stored: both set
    values = tuple(getattr(row, name) for name in COMPARED)
    return StoredFact(values, row.created_ms, row.key, row.valid_from_ms, row.updated_ms)


def beats_stored(fact: Fact, stored: StoredFact | None, undated: set[str]) -> bool:
    """Whether `fact` (the batch's winner for its id) replaces `stored`, the stored fact
    counting as an earlier record. `undated`: ids this import stored from records without
    `updated_at`; those lose to any later record."""
    if stored is None or fact.id in undated:
        return True
    if fact.updated_at is None:
        return False
    updated = dt_to_ms(fact.updated_at)
    if updated != stored.updated_ms:
        return updated > stored.updated_ms
    row = prepare_fact(fact, keep_hits=True)
    return (
        tuple(getattr(row, name) for name in COMPARED) != stored.values
        or (row.created_ms is not None and row.created_ms != stored.created_ms)
        or row.key != stored.key
        or (row.valid_from_ms is not None and row.valid_from_ms != stored.valid_from_ms)
    )
