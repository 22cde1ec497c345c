"""`facts.list(state=..., as_of=...)` against its definition, on random facts.

Random facts (some in chains by key, some superseded by `supersede`, some expired, some
valid only from next year) go into the in-memory store and a SQLite file. `state="all"`
must list exactly the facts stored (newest first); every other state and moment must be
that list filtered by the definition below, read through the returned facts' own fields,
page by page; and both stores must give the same answers, with the other filters too.
Small pages make the SQLite port try its window of the newest facts, large offsets its
bounded two-part read.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlmem.config import StoreConfig
from sqlmem.inmemory.facts import InMemoryFactStore
from sqlmem.protocols import FactState, FactStore
from sqlmem.records import Fact
from sqlmem.sqlite.core.engine import Engine
from sqlmem.sqlite.stores.facts import SQLiteFactStore

NOW = datetime.now(timezone.utc)
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
DAYS = [0, 1, 2, 3, 5, 8]
#: Expiry long past or far ahead, never near now (the stores read the clock themselves).
EXPIRIES = [None, None, NOW - timedelta(days=1), NOW + timedelta(days=365)]
MOMENTS = [None, T0 + timedelta(days=2.5), T0 + timedelta(days=6), NOW - timedelta(hours=1)]
STATES: list[FactState] = ["live", "superseded", "expired", "all"]

fact_specs = st.lists(
    st.tuples(
        st.sampled_from(["", "", "city", "job"]),  # key
        st.sampled_from(DAYS),  # created_at, days after T0
        st.none() | st.sampled_from([*DAYS, 400]),  # valid_from (400: not yet valid)
        st.sampled_from(EXPIRIES),
        st.booleans(),  # supersede the previous fact written (when it has no key)
    ),
    max_size=14,
)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


@contextmanager
def both_stores(
    specs: list[tuple[str, int, int | None, datetime | None, bool]],
) -> Iterator[tuple[InMemoryFactStore, SQLiteFactStore]]:
    """The twin and a SQLite store on a fresh file, both filled with `specs`."""
    folder = Path(tempfile.mkdtemp())
    engine = Engine(folder / "facts.db", StoreConfig())
    try:
        twin, sqlite = InMemoryFactStore(), SQLiteFactStore(engine)
        for store in (twin, sqlite):
            fill(store, specs)
        yield twin, sqlite
    finally:
        engine.close()
        shutil.rmtree(folder, ignore_errors=True)


def fill(store: FactStore, specs: list[tuple[str, int, int | None, datetime | None, bool]]) -> None:
    previous: str | None = None  # the previous fact written, while it has not expired
    for n, (key, created, valid_from, expires, supersede) in enumerate(specs):
        valid = None if valid_from is None else day(valid_from)
        if valid_from == 400:
            valid = NOW + timedelta(days=400)
        fact = Fact(
            id=f"f{n}",
            content=f"fact number {n}",
            tags=["a", "b"][: n % 3],
            category=["", "work", "work/x"][n % 3],
            metadata={"k": n % 2},
            layer="episodic" if n % 4 == 3 else "semantic",
            key=key,
            created_at=day(created),
            valid_from=valid,
            expires_at=expires,
        )
        if supersede and previous is not None and not key:
            written = store.supersede(previous, fact)
        else:
            written = store.remember(fact)
        previous = written if expires is None or expires > NOW else None


def _aware(moment: datetime | None) -> datetime | None:
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=timezone.utc)


def in_state(fact: Fact, state: FactState, as_of: datetime | None, now: datetime) -> bool:
    """The definition, on a fact's own fields; `now` is taken after every write (expiry
    and the moments are far from it; a `supersede` ends the old fact at its write)."""
    expires, valid_to = _aware(fact.expires_at), _aware(fact.valid_to)
    start = _aware(fact.valid_from) or _aware(fact.created_at)
    assert start is not None
    expired = expires is not None and expires <= now
    superseded = valid_to is not None and valid_to <= now
    at = as_of or now
    valid_then = start <= at and (valid_to is None or at < valid_to)
    if state == "live":
        return not expired and valid_then
    if state == "superseded" and (expired or not superseded):
        return False
    if state == "expired" and not expired:
        return False
    return as_of is None or valid_then


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=fact_specs,
    state=st.sampled_from(STATES),
    as_of=st.sampled_from(MOMENTS),
    limit=st.integers(1, 6),
    offset=st.sampled_from([0, 0, 1, 3, 7]),
)
def test_states_follow_their_definition_on_both_stores(
    specs: list[tuple[str, int, int | None, datetime | None, bool]],
    state: FactState,
    as_of: datetime | None,
    limit: int,
    offset: int,
) -> None:
    with both_stores(specs) as (twin, sqlite):
        now = datetime.now(timezone.utc)
        everything = twin.list(state="all", limit=100)
        assert sorted(f.id for f in everything) == sorted(f"f{n}" for n in range(len(specs)))
        assert [f.id for f in sqlite.list(state="all", limit=100)] == [f.id for f in everything]
        wanted = [f.id for f in everything if in_state(f, state, as_of, now)]
        for store in (twin, sqlite):
            got = store.list(state=state, as_of=as_of, limit=limit, offset=offset)
            assert [f.id for f in got] == wanted[offset : offset + limit], store
            if state == "live":  # the default read is the same read
                assert got == store.list(as_of=as_of, limit=limit, offset=offset)


FILTERS: list[dict[str, object]] = [
    {"tags": ["a"]},
    {"tags": ["a", "b"], "metadata": {"k": 1}},  # the rarest tag drives the read
    {"category": "work"},
    {"metadata": {"k": 0}},
    {"metadata": {"k": {"$gte": 1}}},
    {"layer": "episodic"},
    {"tags": ["b"], "layer": "semantic", "min_confidence": 0.5},
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=fact_specs,
    state=st.sampled_from(STATES),
    as_of=st.sampled_from(MOMENTS),
    filters=st.sampled_from(FILTERS),
    limit=st.integers(1, 6),
    offset=st.sampled_from([0, 1, 3]),
)
def test_states_with_other_filters_agree_on_both_stores(
    specs: list[tuple[str, int, int | None, datetime | None, bool]],
    state: FactState,
    as_of: datetime | None,
    filters: dict[str, object],
    limit: int,
    offset: int,
) -> None:
    with both_stores(specs) as (twin, sqlite):
        args = dict(filters, state=state, as_of=as_of, limit=limit, offset=offset)
        want = [f.id for f in twin.list(**args)]  # type: ignore[arg-type]
        assert [f.id for f in sqlite.list(**args)] == want  # type: ignore[arg-type]
        everything = twin.list(**dict(args, limit=100, offset=0))  # type: ignore[arg-type]
        assert want == [f.id for f in everything][offset : offset + limit]
