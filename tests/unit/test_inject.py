"""inject_memory and the default token estimator, against both fact stores."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sqlmem
from sqlmem.context.inject import MEMORY_HEADER, inject_memory
from sqlmem.context.tokens import estimate_tokens
from sqlmem.protocols import FactStore
from sqlmem.records import Fact


@pytest.fixture(params=["memory", "sqlite"])
def facts(request: pytest.FixtureRequest, open_db: Callable[..., sqlmem.MemoryDB]) -> FactStore:
    if request.param == "memory":
        from sqlmem.inmemory.facts import InMemoryFactStore

        return InMemoryFactStore()
    return open_db().facts


class RankedStub:
    """A store whose ranking the test decides; inject_memory only calls `search`."""

    def __init__(self, contents: list[str]) -> None:
        self.facts = [Fact(content=c) for c in contents]
        self.calls: list[tuple[str, int]] = []

    def search(self, query: str, top_k: int = 10, **_: Any) -> list[Fact]:
        self.calls.append((query, top_k))
        return self.facts[:top_k]


def _stub(contents: list[str]) -> FactStore:
    return _as_store(RankedStub(contents))


def _as_store(stub: RankedStub) -> FactStore:
    return cast(FactStore, stub)


def _expected(ranked: list[Fact]) -> str:
    return MEMORY_HEADER + "".join(f"- {f.content}\n" for f in ranked)


# -- format and rank order ---------------------------------------------------------------


def test_exact_format_for_one_fact(facts: FactStore) -> None:
    facts.index(Fact(content="The user likes green tea"))
    assert inject_memory(facts, "tea") == "## Relevant Memory\n\n- The user likes green tea\n"


def test_facts_come_in_the_store_rank_order(facts: FactStore) -> None:
    facts.index_many(
        [
            Fact(content="The user drinks tea every morning"),
            Fact(content="Tea with lemon and tea with honey: the user likes tea"),
            Fact(content="The user's cat is called Miso"),
            Fact(content="The user visited a tea farm in Sri Lanka"),
        ]
    )
    ranked = facts.search("tea", top_k=10)
    assert len(ranked) == 3
    assert inject_memory(facts, "tea") == _expected(ranked)


def test_max_facts_is_passed_as_top_k(facts: FactStore) -> None:
    facts.index_many([Fact(content=f"tea fact number {i}") for i in range(6)])
    block = inject_memory(facts, "tea", max_facts=2)
    assert block == _expected(facts.search("tea", top_k=2))
    assert block.count("\n- ") == 2


def test_surrounding_whitespace_is_trimmed() -> None:
    block = inject_memory(_stub(["  padded fact \t", "\n\nleading breaks"]), "q")
    assert block == "## Relevant Memory\n\n- padded fact\n- leading breaks\n"


def test_stub_sees_query_and_max_facts() -> None:
    store = RankedStub(["a", "b", "c"])
    assert inject_memory(_as_store(store), "q", max_facts=2) == "## Relevant Memory\n\n- a\n- b\n"
    assert store.calls == [("q", 2)]


# -- nothing to say ----------------------------------------------------------------------


def test_no_match_is_empty(facts: FactStore) -> None:
    facts.index(Fact(content="The user likes green tea"))
    assert inject_memory(facts, "volcano") == ""


def test_empty_store_is_empty(facts: FactStore) -> None:
    assert inject_memory(facts, "anything at all") == ""


@pytest.mark.parametrize("query", ["", " ", "\n\t  "])
def test_blank_query_is_empty_and_does_not_search(query: str) -> None:
    store = RankedStub(["a"])
    assert inject_memory(_as_store(store), query) == ""
    assert store.calls == []


@pytest.mark.parametrize("query", ["!!!", "\"'", "AND OR NOT", "C++ a:b *", "🙂"])
def test_any_text_is_a_valid_query(facts: FactStore, query: str) -> None:
    facts.index(Fact(content="The user writes C++ and likes tea"))
    block = inject_memory(facts, query)
    assert block == "" or block.startswith(MEMORY_HEADER)


@pytest.mark.parametrize(("max_facts", "max_tokens"), [(0, 2000), (-1, 2000), (10, 0), (10, -5)])
def test_zero_or_negative_limits_are_empty(
    facts: FactStore, max_facts: int, max_tokens: int
) -> None:
    facts.index(Fact(content="The user likes green tea"))
    assert inject_memory(facts, "tea", max_facts=max_facts, max_tokens=max_tokens) == ""


# -- the token budget --------------------------------------------------------------------


def test_budget_stops_at_first_overflow_and_does_not_try_smaller_later_facts() -> None:
    store = _stub(["short", "a much longer fact that will not fit", "tiny"])
    header_and_first = len(MEMORY_HEADER + "- short\n")
    # Room for "tiny" after "short", but not for the long second fact: stop there.
    block = inject_memory(store, "q", max_tokens=header_and_first + 10, estimator=len)
    assert block == "## Relevant Memory\n\n- short\n"


def test_budget_is_inclusive() -> None:
    store = _stub(["alpha", "beta"])
    full = "## Relevant Memory\n\n- alpha\n- beta\n"
    assert inject_memory(store, "q", max_tokens=len(full), estimator=len) == full
    assert inject_memory(store, "q", max_tokens=len(full) - 1, estimator=len) == (
        "## Relevant Memory\n\n- alpha\n"
    )


def test_first_fact_too_big_gives_empty_not_a_bare_header() -> None:
    store = _stub(["x" * 100, "y"])
    assert inject_memory(store, "q", max_tokens=50, estimator=len) == ""


def test_header_alone_over_budget_is_empty() -> None:
    store = _stub(["a"])
    assert inject_memory(store, "q", max_tokens=len(MEMORY_HEADER) - 1, estimator=len) == ""


def test_estimator_measures_the_whole_rendered_block() -> None:
    seen: list[str] = []

    def spy(text: str) -> int:
        seen.append(text)
        return 0

    inject_memory(_stub(["a", "b"]), "q", estimator=spy)
    assert seen == ["## Relevant Memory\n\n- a\n", "## Relevant Memory\n\n- a\n- b\n"]


def test_budget_with_real_store_keeps_a_rank_order_prefix(facts: FactStore) -> None:
    facts.index_many([Fact(content=" ".join(["tea note", *["word"] * i])) for i in range(8)])
    ranked = facts.search("tea", top_k=8)
    full = _expected(ranked)
    budget = len(full) // 2
    block = inject_memory(facts, "tea", max_facts=8, max_tokens=budget, estimator=len)
    assert len(block) <= budget
    kept = block.splitlines()[2:]
    assert kept == [f"- {f.content}" for f in ranked[: len(kept)]]
    assert len(_expected(ranked[: len(kept) + 1])) > budget


def test_default_estimator_budget(facts: FactStore) -> None:
    facts.index(Fact(content="The user likes tea"))
    rendered = "## Relevant Memory\n\n- The user likes tea\n"  # 41 characters
    assert estimate_tokens(rendered) == 11
    assert inject_memory(facts, "tea", max_tokens=11) == rendered
    assert inject_memory(facts, "tea", max_tokens=10) == ""


# -- multi-line facts --------------------------------------------------------------------


def test_multiline_fact_stays_one_bullet(facts: FactStore) -> None:
    facts.index(Fact(content="Shopping list:\n  milk\r\n\n- eggs\n## not a heading\u2028tea"))
    facts.index(Fact(content="The user likes tea"))
    block = inject_memory(facts, "tea")
    body = block.removeprefix(MEMORY_HEADER)
    assert block.startswith(MEMORY_HEADER)
    assert all(line.startswith("- ") for line in body.splitlines())
    assert "- Shopping list: milk - eggs ## not a heading tea\n" in block
    assert block.count("\n- ") == 2


# -- the default estimator ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("a", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("hello world, how are you?", 7),  # 25 chars
        ("你好", 2),
        ("你好世界", 4),
        ("你好abcd", 3),
        ("こんにちは", 5),
        ("안녕하세요", 5),
        ("สวัสดี", 6),
        ("我喜欢Python编程", 5 + 2),  # 5 CJK + ceil(6 / 4)
    ],
)
def test_estimate_tokens(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


@given(st.text(), st.text())
def test_estimate_is_bounded_and_subadditive(a: str, b: str) -> None:
    ab = estimate_tokens(a + b)
    assert math.ceil(len(a + b) / 4) <= ab <= len(a + b)
    assert ab <= estimate_tokens(a) + estimate_tokens(b)


def test_cjk_costs_four_times_latin_per_character() -> None:
    assert estimate_tokens("中" * 100) == 4 * estimate_tokens("a" * 100)
