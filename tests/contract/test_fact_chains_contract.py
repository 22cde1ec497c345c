"""Facts that change, on every fact store: chains by key, supersede, valid time, history.

One behaviour suite for SQLite, the in-memory twin and PostgreSQL (the `store` fixture).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest

from sqlmem import Fact, FactNotFoundError, InvalidArgumentError
from sqlmem.protocols import FactStore

MakeFacts = Callable[..., FactStore]

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def store(make_facts: MakeFacts) -> FactStore:
    return make_facts()


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def live_contents(store: FactStore, query: str = "lives", **kw: object) -> list[str]:
    return sorted(f.content for f in store.search(query, top_k=50, **kw))  # type: ignore[arg-type]


def test_a_new_value_of_a_key_supersedes_the_old(store: FactStore) -> None:
    paris = store.remember(Fact(content="The user lives in Paris.", key="user.city"))
    berlin = store.remember(Fact(content="The user lives in Berlin.", key="user.city"))
    assert live_contents(store) == ["The user lives in Berlin."]
    old, new = store.get(paris), store.get(berlin)
    assert old is not None and new is not None  # get returns superseded facts too
    assert old.superseded_by == berlin and new.superseded_by is None
    assert old.valid_to is not None and old.valid_to == new.valid_from
    assert new.valid_to is None
    assert [f.id for f in store.history(key="user.city")] == [paris, berlin]
    assert [f.id for f in store.history(id=berlin)] == [paris, berlin]
    assert store.count() == 1 and len(store) == 1
    assert [f.id for f in store.list()] == [berlin]


def test_an_older_fact_arriving_late_is_stored_superseded(store: FactStore) -> None:
    new = store.remember(Fact(content="lives in Berlin", key="user.city", valid_from=day(10)))
    old = store.remember(Fact(content="lives in Paris", key="user.city", valid_from=day(1)))
    assert live_contents(store) == ["lives in Berlin"]
    got = store.get(old)
    assert got is not None and got.superseded_by == new and got.valid_to == day(10)
    assert [f.id for f in store.history(key="user.city")] == [old, new]


def test_equal_valid_from_the_later_write_wins(store: FactStore) -> None:
    first = store.remember(Fact(content="lives in Rome", key="k", valid_from=day(3)))
    second = store.remember(Fact(content="lives in Oslo", key="k", valid_from=day(3)))
    assert live_contents(store) == ["lives in Oslo"]
    assert [f.id for f in store.history(key="k")] == [first, second]


def test_a_fact_in_the_middle_of_a_chain_links_both_ways(store: FactStore) -> None:
    a = store.remember(Fact(content="lives in A", key="k", valid_from=day(1)))
    c = store.remember(Fact(content="lives in C", key="k", valid_from=day(3)))
    b = store.remember(Fact(content="lives in B", key="k", valid_from=day(2)))
    chain = store.history(key="k")
    assert [f.id for f in chain] == [a, b, c]
    assert [f.superseded_by for f in chain] == [b, c, None]
    assert [f.valid_to for f in chain] == [day(2), day(3), None]


def test_as_of_reads_what_was_valid_then(store: FactStore) -> None:
    store.remember(Fact(content="lives in Paris", key="user.city", valid_from=day(1)))
    store.remember(Fact(content="lives in Berlin", key="user.city", valid_from=day(10)))
    assert live_contents(store, as_of=day(5)) == ["lives in Paris"]
    assert live_contents(store, as_of=day(10)) == ["lives in Berlin"]  # valid_to excluded
    assert live_contents(store, as_of=day(0)) == []
    assert [f.content for f in store.list(as_of=day(5))] == ["lives in Paris"]
    assert [f.content for f in store.list(as_of=day(20))] == ["lives in Berlin"]
    assert [f.content for f in store.search("lives", as_of=day(5), mode="all")] == [
        "lives in Paris"
    ]


def test_as_of_takes_created_at_for_facts_without_valid_time(store: FactStore) -> None:
    store.index(Fact(id="x", content="lives alone", created_at=day(5)))
    assert live_contents(store, as_of=day(4)) == []
    assert live_contents(store, as_of=day(5)) == ["lives alone"]
    assert live_contents(store) == ["lives alone"]


def test_as_of_must_be_an_aware_datetime(store: FactStore) -> None:
    with pytest.raises(InvalidArgumentError):
        store.search("x", as_of=datetime(2024, 1, 1))
    with pytest.raises(InvalidArgumentError):
        store.list(as_of="2024-01-01")  # type: ignore[arg-type]


def test_a_future_valid_from_is_not_live_yet(store: FactStore) -> None:
    future = datetime.now(timezone.utc) + timedelta(days=30)
    store.remember(Fact(content="lives in Lyon", key="k"))
    store.remember(Fact(content="lives in Nice", key="k", valid_from=future))
    assert live_contents(store) == ["lives in Lyon"]
    assert live_contents(store, as_of=future + timedelta(days=1)) == ["lives in Nice"]


def test_supersede_an_unkeyed_fact(store: FactStore) -> None:
    old = store.remember(Fact(content="The user is vegetarian.", tags=["diet"]))
    new = store.supersede(old, Fact(content="The user eats fish again.", tags=["diet"]))
    assert [f.id for f in store.list()] == [new]
    assert store.tags() == {"diet": 1}
    assert [f.id for f in store.history(id=old)] == [old, new]
    assert [f.id for f in store.history(id=new)] == [old, new]
    got = store.get(old)
    assert got is not None and got.superseded_by == new and got.key == ""


def test_supersede_keeps_the_old_facts_key_and_layer(store: FactStore) -> None:
    old = store.remember(Fact(content="works at Acme", key="user.job", layer="procedural"))
    new = store.supersede(old, Fact(content="works at Initech"))
    got = store.get(new)
    assert got is not None and (got.key, got.layer) == ("user.job", "procedural")
    assert [f.id for f in store.history(key="user.job")] == [old, new]
    with pytest.raises(InvalidArgumentError):
        store.supersede(new, Fact(content="works at Hooli", key="other.key"))


def test_supersede_an_unknown_fact_raises(store: FactStore) -> None:
    with pytest.raises(FactNotFoundError):
        store.supersede("nope", Fact(content="x"))
    assert store.count() == 0


def test_deleting_the_live_fact_makes_the_previous_live_again(store: FactStore) -> None:
    paris = store.remember(Fact(content="lives in Paris", key="user.city"))
    berlin = store.remember(Fact(content="lives in Berlin", key="user.city"))
    store.delete(berlin)
    assert live_contents(store) == ["lives in Paris"]
    got = store.get(paris)
    assert got is not None and got.superseded_by is None and got.valid_to is None
    assert [f.id for f in store.history(key="user.city")] == [paris]


def test_deleting_a_middle_fact_keeps_the_chain_whole(store: FactStore) -> None:
    a = store.remember(Fact(content="lives in A", key="k", valid_from=day(1)))
    b = store.remember(Fact(content="lives in B", key="k", valid_from=day(2)))
    c = store.remember(Fact(content="lives in C", key="k", valid_from=day(3)))
    assert store.delete_many([b]) == 1
    chain = store.history(key="k")
    assert [(f.id, f.superseded_by, f.valid_to) for f in chain] == [(a, c, day(3)), (c, None, None)]


def test_same_text_same_key_merges_other_key_does_not(store: FactStore) -> None:
    a = store.remember(Fact(content="Likes tea.", key="user.drink"))
    assert store.remember(Fact(content="likes tea", key="user.drink")) == a
    got = store.get(a)
    assert got is not None and got.hits == 2
    b = store.remember(Fact(content="Likes tea.", key="user.favourite"))
    c = store.remember(Fact(content="Likes tea."))
    assert len({a, b, c}) == 3


def test_a_value_coming_back_is_a_new_version(store: FactStore) -> None:
    first = store.remember(Fact(content="lives in Paris", key="k"))
    store.remember(Fact(content="lives in Berlin", key="k"))
    again = store.remember(Fact(content="lives in Paris", key="k"))
    assert again != first
    assert [f.content for f in store.history(key="k")] == [
        "lives in Paris",
        "lives in Berlin",
        "lives in Paris",
    ]
    assert live_contents(store) == ["lives in Paris"]


def test_layers_hold_separate_chains(store: FactStore) -> None:
    store.remember(Fact(content="lives in Paris", key="k", layer="episodic"))
    store.remember(Fact(content="lives in Berlin", key="k", layer="semantic"))
    assert live_contents(store) == ["lives in Berlin", "lives in Paris"]


def test_index_places_keyed_facts_too(store: FactStore) -> None:
    store.index(Fact(id="a", content="lives in Paris", key="k", valid_from=day(1)))
    store.index_many(
        [
            Fact(id="b", content="lives in Berlin", key="k", valid_from=day(2)),
            Fact(id="c", content="lives in Rome", key="j", valid_from=day(2)),
        ]
    )
    assert live_contents(store) == ["lives in Berlin", "lives in Rome"]
    # an update by id that moves the fact in time relinks the chain
    store.index(Fact(id="a", content="lives in Paris", key="k", valid_from=day(3)))
    assert [f.id for f in store.history(key="k")] == ["b", "a"]
    assert live_contents(store) == ["lives in Paris", "lives in Rome"]


def test_reads_of_now_skip_superseded_facts(store: FactStore) -> None:
    old = store.remember(
        Fact(content="lives in Paris", key="k", tags=["old"], category="home", metadata={"v": 1})
    )
    store.remember(Fact(content="lives in Berlin", key="k", tags=["new"], metadata={"v": 2}))
    assert store.tags() == {"new": 1}
    assert store.categories() == []
    assert store.search_by_metadata("v", 1) == []
    assert [f.content for f in store.search_by_metadata("v", 2)] == ["lives in Berlin"]
    assert [f.id for f in store.list(tags=["old"])] == []
    assert [f.id for f in store.list(tags=["old"], as_of=day(-1))] == []
    assert store.get(old) is not None


def test_key_is_checked(store: FactStore) -> None:
    with pytest.raises(InvalidArgumentError):
        Fact(content="x", key="has space")
    with pytest.raises(InvalidArgumentError):
        Fact(content="x", key="k" * 129)
    fact = Fact(content="x", key="a.b-c_d:e")
    fact.key = "bad key"
    with pytest.raises(InvalidArgumentError):
        store.remember(fact)
    assert store.count() == 0


def test_history_arguments(store: FactStore) -> None:
    with pytest.raises(InvalidArgumentError):
        store.history()
    with pytest.raises(InvalidArgumentError):
        store.history(key="k", id="x")
    assert store.history(key="nothing") == []
    assert store.history(id="unknown") == []
    alone = store.remember(Fact(content="alone"))
    assert [f.id for f in store.history(id=alone)] == [alone]


class _Scripted:
    """A resolver that names a fixed id (or raises)."""

    def __init__(self, answer: str | Exception | None) -> None:
        self.answer = answer
        self.calls = 0

    def resolve(self, store: FactStore, fact: Fact) -> str | None:
        self.calls += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_a_resolver_naming_a_live_fact_supersedes_it(store: FactStore) -> None:
    old = store.remember(Fact(content="The user lives in Paris."))
    resolver = _Scripted(old)
    new = store.remember(Fact(content="The user moved to Berlin."), resolver=resolver)
    assert resolver.calls == 1
    assert [f.id for f in store.list()] == [new]
    assert [f.id for f in store.history(id=new)] == [old, new]


@pytest.mark.parametrize("answer", [RuntimeError("model down"), None, "", "unknown-id"])
def test_a_failing_resolver_stores_the_fact_as_new(store: FactStore, answer: object) -> None:
    old = store.remember(Fact(content="The user lives in Paris."))
    new = store.remember(Fact(content="The user moved to Berlin."), resolver=_Scripted(answer))  # type: ignore[arg-type]
    assert sorted(f.id for f in store.list()) == sorted([old, new])


def test_a_resolver_naming_a_superseded_fact_stores_the_fact_as_new(store: FactStore) -> None:
    old = store.remember(Fact(content="lives in Paris"))
    newer = store.supersede(old, Fact(content="lives in Rome"))
    new = store.remember(Fact(content="lives in Oslo"), resolver=_Scripted(old))
    assert sorted(f.id for f in store.list()) == sorted([newer, new])


def test_packs_and_injection_offer_live_facts_only(store: FactStore) -> None:
    from sqlmem import build_memory_pack

    store.remember(Fact(content="The user lives in Paris.", key="user.city"))
    store.remember(Fact(content="The user lives in Berlin.", key="user.city"))
    pack = build_memory_pack(store, "where does the user live")
    assert [i.fact.content for i in pack.items] == ["The user lives in Berlin."]
    assert "Paris" not in pack.text
    empty_query = build_memory_pack(store, "")
    assert [i.fact.content for i in empty_query.items] == ["The user lives in Berlin."]


def test_promoting_a_keyed_fact_moves_it_to_that_layers_chain(store: FactStore) -> None:
    a = store.remember(Fact(content="lives in A", key="k", layer="episodic", valid_from=day(1)))
    b = store.remember(Fact(content="lives in B", key="k", layer="episodic", valid_from=day(2)))
    s = store.remember(Fact(content="lives in S", key="k", layer="semantic", valid_from=day(1)))
    store.promote(b, "semantic")
    assert live_contents(store) == ["lives in A", "lives in B"]  # A live again in episodic
    got = store.get(s)
    assert got is not None and got.superseded_by == b
    assert [f.id for f in store.history(id=b)] == [s, b]
    assert [f.id for f in store.history(id=a)] == [a]
    store.index(Fact(id=a, content="lives in A", key="", layer="episodic"))  # drops its key
    assert [f.id for f in store.history(key="k")] == [s, b]
