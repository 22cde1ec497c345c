"""`facts.list(state=...)` on every fact store: what the agent no longer sees, for an
inspector, without changing any other read.

One behaviour suite for SQLite, the in-memory twin and PostgreSQL (the `store` fixture),
and the same calls awaited through `sqlmem.aio` on every backend.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from targets import BACKENDS, Target, backend_target

import sqlmem
import sqlmem.aio
from sqlmem import Fact, InvalidArgumentError
from sqlmem.protocols import FactStore

MakeFacts = Callable[..., FactStore]

NOW = datetime.now(timezone.utc)
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


@pytest.fixture
def store(make_facts: MakeFacts) -> FactStore:
    return make_facts()


def fill(store: FactStore) -> dict[str, str]:
    """A plain live fact, an expired one, a chain of three (two superseded, one of them
    expired too), a fact valid only from next year, and an unkeyed superseded fact."""
    ids = {
        "plain": store.index(Fact(content="plain fact", created_at=day(1))),
        "expired": store.index(
            Fact(content="expired fact", created_at=day(2), expires_at=NOW - timedelta(hours=1))
        ),
        "paris": store.remember(
            Fact(content="lives in Paris", key="city", valid_from=day(3), created_at=day(3))
        ),
        "rome": store.remember(
            Fact(
                content="lives in Rome",
                key="city",
                valid_from=day(5),
                created_at=day(5),
                expires_at=NOW - timedelta(minutes=5),
            )
        ),
        "oslo": store.remember(
            Fact(content="lives in Oslo", key="city", valid_from=day(8), created_at=day(8))
        ),
        "later": store.index(
            Fact(content="valid later", created_at=day(9), valid_from=NOW + timedelta(days=365))
        ),
        "draft": store.index(Fact(content="first draft", created_at=day(10))),
    }
    ids["final"] = store.supersede(ids["draft"], Fact(content="final text", created_at=day(11)))
    return ids


def listed(store: FactStore, **kw: object) -> list[str]:
    kw.setdefault("limit", 100)
    return [f.id for f in store.list(**kw)]  # type: ignore[arg-type]


def named(ids: dict[str, str], *names: str) -> list[str]:
    return [ids[n] for n in names]


def test_live_is_the_default_and_unchanged(store: FactStore) -> None:
    ids = fill(store)
    assert listed(store) == named(ids, "final", "oslo", "plain")
    assert listed(store, state="live") == listed(store)
    then = day(6)  # Rome was live (not yet expired then, but expired now: not shown)
    assert listed(store, as_of=then, state="live") == listed(store, as_of=then)
    assert listed(store, as_of=day(4)) == named(ids, "paris", "plain")


def test_superseded_lists_what_a_later_fact_took_over(store: FactStore) -> None:
    ids = fill(store)
    # Rome is superseded too, but it expired: expired facts are only in "expired"
    assert listed(store, state="superseded") == named(ids, "draft", "paris")
    for fact in store.list(state="superseded"):
        assert fact.superseded_by is not None and fact.valid_to is not None


def test_expired_lists_the_facts_expire_would_delete(store: FactStore) -> None:
    ids = fill(store)
    assert listed(store, state="expired") == named(ids, "rome", "expired")
    assert store.get(ids["expired"]) is None  # every other read still skips them
    assert store.expire() == 2
    assert listed(store, state="expired") == []


def test_all_lists_every_stored_fact(store: FactStore) -> None:
    ids = fill(store)
    everything = named(ids, "final", "draft", "later", "oslo", "rome", "paris", "expired", "plain")
    assert listed(store, state="all") == everything
    assert store.count() == 3  # counts and searches stay on live facts
    assert [f.id for f in store.search("lives")] == named(ids, "oslo")


def test_as_of_keeps_the_facts_valid_then_in_every_state(store: FactStore) -> None:
    ids = fill(store)
    assert listed(store, state="superseded", as_of=day(4)) == named(ids, "paris")
    assert listed(store, state="expired", as_of=day(6)) == named(ids, "rome", "expired")
    assert listed(store, state="expired", as_of=day(2.5)) == named(ids, "expired")
    assert listed(store, state="all", as_of=day(6)) == named(ids, "rome", "expired", "plain")


def test_states_take_the_other_filters_and_paging(store: FactStore) -> None:
    ids = fill(store)
    assert listed(store, state="all", tags=["none"]) == []
    assert listed(store, state="superseded", layer="semantic") == named(ids, "draft", "paris")
    assert listed(store, state="superseded", layer="episodic") == []
    page = [f.id for f in store.list(state="all", limit=3, offset=2)]
    assert page == named(ids, "later", "oslo", "rome")
    assert store.list(state="expired", limit=0) == []


def test_a_page_as_of_a_time_past_the_newest_two_thousand_facts(store: FactStore) -> None:
    """The SQL stores look among the newest 2,000 facts first: a page they do not fill
    is read again from every fact valid then (backdated ones and older ones)."""
    old = [Fact(id=f"o{i}", content=f"old {i}", created_at=day(1 + i / 10)) for i in range(10)]
    new = [
        Fact(
            id=f"n{i}",
            content=f"new {i}",
            created_at=day(20) + timedelta(seconds=i),
            valid_from=day(5) if i in (500, 1500) else None,
        )
        for i in range(2000)
    ]
    store.index_many([*old, *new])
    then = day(10)
    assert listed(store, as_of=then, limit=5) == ["n1500", "n500", "o9", "o8", "o7"]
    assert [f.id for f in store.list(as_of=then, limit=1)] == ["n1500"]
    assert [f.id for f in store.list(as_of=then, limit=2, offset=1)] == ["n500", "o9"]
    assert [f.id for f in store.list(as_of=then, limit=3, offset=9)] == ["o2", "o1", "o0"]
    assert [f.id for f in store.list(as_of=day(30), limit=2)] == ["n1999", "n1998"]


@pytest.mark.parametrize("state", ["", "Live", "deleted", None, 1])
def test_an_unknown_state_is_refused(store: FactStore, state: object) -> None:
    with pytest.raises(InvalidArgumentError, match="state must be one of"):
        store.list(state=state)  # type: ignore[arg-type]


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    return backend_target(request, tmp_path)


def test_states_awaited_on_every_backend(target: Target) -> None:
    async def main() -> None:
        adb = await sqlmem.aio.open(target.target, agent_id=target.agent_id)
        async with adb:
            old = await adb.facts.remember(Fact(content="lives in Paris", key="k"))
            new = await adb.facts.remember(Fact(content="lives in Oslo", key="k"))
            gone = await adb.facts.index(
                Fact(content="stale", expires_at=NOW - timedelta(seconds=1))
            )
            assert [f.id for f in await adb.facts.list()] == [new]
            assert [f.id for f in await adb.facts.list(state="superseded")] == [old]
            assert [f.id for f in await adb.facts.list(state="expired")] == [gone]
            assert len(await adb.facts.list(state="all")) == 3
            with pytest.raises(InvalidArgumentError):
                await adb.facts.list(state="gone")  # type: ignore[arg-type]

    asyncio.run(main())
