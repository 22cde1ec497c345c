"""SPEC 13: `build_memory_pack` over both fact stores: candidates per layer, scores, budget
filling, the exact render format, diagnostics, several stores with dedup by fingerprint."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem import Fact, InvalidArgumentError
from sqlmem.context import MemoryPack, PackConfig, build_memory_pack, inject_memory
from sqlmem.protocols import FactStore

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
MakeFacts = Callable[[], FactStore]


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def make_facts(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeFacts]:
    opened: list[sqlmem.MemoryDB] = []

    def make() -> FactStore:
        if request.param == "memory":
            return sqlmem.InMemoryFactStore()
        if request.param == "postgres":  # a fresh agent of the session's server
            return request.getfixturevalue("open_pg")().facts  # type: ignore[no-any-return]
        db = sqlmem.open(tmp_path / f"m{len(opened)}.db")
        opened.append(db)
        return db.facts

    yield make
    for db in opened:
        db.close()


@pytest.fixture
def facts(make_facts: MakeFacts) -> FactStore:
    return make_facts()


def _fact(content: str, layer: str = "semantic", *, days_old: float = 0, **kw: Any) -> Fact:
    when = NOW - timedelta(days=days_old)
    return Fact(content=content, layer=layer, created_at=when, updated_at=when, **kw)


def test_sections_in_layer_order_with_the_exact_format(facts: FactStore) -> None:
    facts.index(_fact("Deploy tea service with make release", "procedural"))
    facts.index(_fact("The user drinks green tea", "semantic"))
    facts.index(_fact("Yesterday the user ordered tea\nat the cafe", "episodic"))
    facts.index(_fact("Unrelated fact about cars", "semantic"))
    pack = build_memory_pack(facts, "tea", now=NOW)
    assert isinstance(pack, MemoryPack)
    assert pack.text == (
        "# Memory\n"
        "\n## Semantic\n- The user drinks green tea\n"
        "\n## Procedural\n- Deploy tea service with make release\n"
        "\n## Episodic\n- Yesterday the user ordered tea at the cafe\n"
    )
    assert [i.layer for i in pack.items] == ["semantic", "procedural", "episodic"]
    assert pack.tokens == sqlmem.estimate_tokens(pack.text)
    assert pack.diagnostics["candidates"] == {"semantic": 1, "procedural": 1, "episodic": 1}
    assert pack.diagnostics["selected"] == {"semantic": 1, "procedural": 1, "episodic": 1}
    assert pack.diagnostics["skipped_for_budget"] == 0


def test_nothing_found_is_an_empty_pack(facts: FactStore) -> None:
    facts.index(_fact("The user drinks tea"))
    pack = build_memory_pack(facts, "bicycle", now=NOW)
    assert pack.items == () and pack.text == "" and pack.tokens == 0


def test_score_is_the_normalised_weighted_sum(facts: FactStore) -> None:
    facts.index(_fact("tea at noon", "episodic", days_old=30, salience=0.8, confidence=0.5))
    facts.index(_fact("tea is green", "semantic", days_old=300, salience=0.1, confidence=0.9))
    pack = build_memory_pack(facts, "tea", now=NOW)
    by_layer = {i.layer: i for i in pack.items}
    episodic, semantic = by_layer["episodic"], by_layer["semantic"]
    assert episodic.relevance == 1.0 and semantic.relevance == 1.0  # alone in their layer
    assert episodic.recency == pytest.approx(0.5)  # one half-life old
    assert semantic.recency == 1.0  # semantic does not decay
    assert episodic.score == pytest.approx(0.6 + 0.2 * 0.8 + 0.1 * 0.5 + 0.1 * 0.5)
    assert semantic.score == pytest.approx(0.6 + 0.2 * 0.1 + 0.1 * 0.9 + 0.1 * 1.0)
    config = PackConfig(weights={"relevance": 3, "salience": 1})  # normalised by the sum
    again = {i.layer: i for i in build_memory_pack(facts, "tea", config, now=NOW).items}
    assert again["episodic"].score == pytest.approx(0.75 + 0.25 * 0.8)


def test_relevance_is_relative_to_the_layers_best(facts: FactStore) -> None:
    facts.index(_fact("tea tea tea green tea"))
    facts.index(_fact("a long sentence that mentions tea once among many other words here"))
    items = build_memory_pack(facts, "tea", now=NOW).items
    assert items[0].relevance == 1.0
    assert 0 < items[1].relevance < 1.0


def test_top_k_per_layer_and_skipped_layers(facts: FactStore) -> None:
    for i in range(5):
        facts.index(_fact(f"tea note {i}", "semantic"))
        facts.index(_fact(f"tea event {i}", "episodic"))
        facts.index(_fact(f"tea howto {i}", "procedural"))
    config = PackConfig(top_k={"semantic": 2, "episodic": 0})  # procedural missing: skipped
    pack = build_memory_pack(facts, "tea", config, now=NOW)
    assert [i.layer for i in pack.items] == ["semantic", "semantic"]
    assert pack.diagnostics["candidates"] == {"semantic": 5}
    assert pack.diagnostics["selected"] == {"semantic": 2}


def test_min_confidence_is_an_inclusive_floor(facts: FactStore) -> None:
    facts.index(_fact("tea one", confidence=0.5))
    facts.index(_fact("tea two", confidence=0.49))
    pack = build_memory_pack(facts, "tea", PackConfig(min_confidence=0.5), now=NOW)
    assert [i.fact.content for i in pack.items] == ["tea one"]


def test_budget_soft_then_overflow_then_skip(facts: FactStore) -> None:
    # a high scorer (salience and confidence 1) and low scorers (0)
    facts.index(_fact("tea " + "x" * 30, salience=1.0, confidence=1.0))
    for i in range(3):
        facts.index(_fact(f"tea low {i} " + "y" * 30, salience=0.0, confidence=0.0))
    facts.index(_fact("tea short", salience=0.0, confidence=0.0))
    tokens = len  # one token per character keeps the arithmetic visible
    header = len("# Memory\n\n## Semantic\n")
    line = len("- tea " + "x" * 30 + "\n")
    salience_only = {"salience": 1.0}  # score = salience: 1 for the best, 0 for the rest
    config = PackConfig(
        soft_budget_tokens=header + line,  # room for the best item only
        max_budget_tokens=header + line + 20,
        overflow_min_score=0.5,
        weights=salience_only,
        estimator=tokens,
    )
    pack = build_memory_pack(facts, "tea", config, now=NOW)
    contents = [i.fact.content for i in pack.items]
    assert contents == ["tea " + "x" * 30]
    assert pack.diagnostics["skipped_for_budget"] == 4
    # ("tea short" would fit the hard budget, but scores below overflow_min_score.)
    loose = PackConfig(
        soft_budget_tokens=header + line + len("- tea short\n"),
        max_budget_tokens=10_000,
        overflow_min_score=1.0,
        weights=salience_only,
        estimator=tokens,
    )
    contents = [i.fact.content for i in build_memory_pack(facts, "tea", loose, now=NOW).items]
    # the long low items do not fit the soft budget and are skipped; the short one after
    # them still gets in
    assert contents == ["tea " + "x" * 30, "tea short"]


def test_overflow_items_fill_up_to_the_hard_budget(facts: FactStore) -> None:
    facts.index(_fact("tea alpha", salience=1.0))
    facts.index(_fact("tea beta", salience=1.0))
    facts.index(_fact("tea gamma", salience=0.9))
    header = len("# Memory\n\n## Semantic\n")
    config = PackConfig(
        soft_budget_tokens=header + 12,  # one line
        max_budget_tokens=header + 25,  # two lines
        overflow_min_score=0.5,
        weights={"salience": 1.0},
        estimator=len,
    )
    pack = build_memory_pack(facts, "tea", config, now=NOW)
    assert sorted(i.fact.content for i in pack.items) == ["tea alpha", "tea beta"]
    assert pack.tokens <= config.max_budget_tokens
    assert pack.diagnostics["skipped_for_budget"] == 1


def test_several_stores_merge_and_dedup_by_fingerprint(make_facts: MakeFacts) -> None:
    agent, scope = make_facts(), make_facts()
    agent.index(_fact("The user drinks tea.", salience=0.2))
    scope.index(_fact("the user  DRINKS tea", salience=0.9))  # same fingerprint
    scope.index(_fact("The team brews tea at nine", "procedural"))
    pack = build_memory_pack([agent, scope], "tea", now=NOW)
    assert [i.fact.content for i in pack.items] == [
        "the user  DRINKS tea",  # the better scored copy
        "The team brews tea at nine",
    ]
    assert pack.diagnostics["candidates"]["semantic"] == 2
    assert pack.diagnostics["duplicates"] == 1
    assert pack.diagnostics["stores"] == 2
    block = inject_memory([agent, scope], "tea")
    assert block.count("drinks tea") + block.count("DRINKS tea") == 1


def test_an_empty_query_takes_the_newest_by_updated_at(facts: FactStore) -> None:
    old = facts.index(_fact("old but updated", days_old=100))
    for i in range(3):
        facts.index(_fact(f"middle {i}", days_old=10 + i))
    facts.index(
        Fact(
            id=old, content="old but updated", updated_at=NOW, created_at=NOW - timedelta(days=100)
        )
    )
    pack = build_memory_pack(facts, "", PackConfig(top_k={"semantic": 1}), now=NOW)
    assert [i.fact.id for i in pack.items] == [old]
    assert pack.items[0].relevance == 1.0


def test_expired_facts_never_appear(facts: FactStore) -> None:
    facts.index(_fact("tea gone", expires_at=datetime.now(timezone.utc) - timedelta(seconds=1)))
    facts.index(_fact("tea stays"))
    assert [i.fact.content for i in build_memory_pack(facts, "tea", now=NOW).items] == ["tea stays"]
    assert [i.fact.content for i in build_memory_pack(facts, "", now=NOW).items] == ["tea stays"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("top_k", {"semantic": -1}),
        ("top_k", {"working": 3}),
        ("soft_budget_tokens", -1),
        ("max_budget_tokens", 10),  # below the soft budget
        ("overflow_min_score", math.nan),
        ("overflow_min_score", 1.5),
        ("half_life_days", {"episodic": 0}),
        ("half_life_days", {"episodic": math.inf}),
        ("weights", {"relevance": -1}),
        ("weights", {"novelty": 1}),
        ("weights", {"relevance": 0}),
        ("min_confidence", 2),
        ("estimator", "len"),
    ],
)
def test_bad_config_names_the_field(field: str, value: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="PackConfig"):
        PackConfig(**{field: value})


def test_bad_arguments(facts: FactStore) -> None:
    with pytest.raises(InvalidArgumentError):
        build_memory_pack(facts, None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        build_memory_pack(facts, "x", {"top_k": 1})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        build_memory_pack([], "x")
    with pytest.raises(InvalidArgumentError):
        build_memory_pack(facts, "x", now="yesterday")  # type: ignore[arg-type]
