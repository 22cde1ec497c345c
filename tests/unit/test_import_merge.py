"""The import's merge rule (`rules.import_merge`), the one every backend's import applies:
the later `updated_at` wins, the file counting as later, so a record equal to the stored
fact writes nothing; an undated record only fills an id nothing else gives."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from sqlmem import Fact
from sqlmem.rules.filters import prepare_fact
from sqlmem.rules.import_merge import StoredFact, beats_stored, stored_fact_of

T0 = datetime(2024, 3, 1, tzinfo=timezone.utc)


def _stored(fact: Fact) -> StoredFact:
    return stored_fact_of(prepare_fact(fact, keep_hits=True))


def _fact(content: str, days: int | None, **more: object) -> Fact:
    updated = None if days is None else T0 + timedelta(days=days)
    return Fact(id="f", content=content, created_at=T0, updated_at=updated, hits=1, **more)


def test_nothing_stored_or_stored_by_an_undated_record_of_this_import() -> None:
    assert beats_stored(_fact("new", None), None, set())
    assert beats_stored(_fact("new", None), _stored(_fact("old", 5)), {"f"})


@given(st.integers(-30, 30), st.integers(-30, 30), st.booleans())
def test_the_later_update_wins_and_a_tie_writes_only_what_differs(
    mine: int, theirs: int, same_text: bool
) -> None:
    stored = _stored(_fact("stored text", theirs))
    record = _fact("stored text" if same_text else "other text", mine)
    expected = mine > theirs or (mine == theirs and not same_text)
    assert beats_stored(record, stored, set()) is expected


@given(st.integers(-30, 30))
def test_an_undated_record_never_replaces_a_stored_fact(days: int) -> None:
    assert not beats_stored(_fact("other text", None), _stored(_fact("stored", days)), set())


def test_times_the_record_leaves_out_are_not_compared() -> None:
    """A record without created_at or valid_from says nothing about them: the store keeps
    its own, so they cannot make the record differ."""
    stored = _stored(_fact("text", 0, valid_from=T0 - timedelta(days=9)))
    bare = Fact(id="f", content="text", updated_at=T0, hits=1)
    assert not beats_stored(bare, stored, set())
    moved = Fact(id="f", content="text", updated_at=T0, hits=1, valid_from=T0)
    assert beats_stored(moved, stored, set())
