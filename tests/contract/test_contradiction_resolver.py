"""`ContradictionResolver`: a scripted model decides whether a new fact without a key
supersedes a live one; every failure stores the fact as new, nothing is ever deleted."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from sqlmem import ContradictionResolver, Fact, InvalidArgumentError
from sqlmem.embedders import HashEmbedder
from sqlmem.protocols import FactStore

MakeFacts = Callable[..., FactStore]


def _ids_in(prompt: str) -> list[str]:
    return re.findall(r"- id (\S+):", prompt)


def test_the_model_sees_the_closest_live_facts_and_supersedes_one(
    make_facts: MakeFacts,
) -> None:
    store = make_facts()
    paris = store.remember(Fact(content="The user lives in Paris."))
    tea = store.remember(Fact(content="The user likes green tea."))
    prompts: list[str] = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        return json.dumps({"supersedes": paris})

    resolver = ContradictionResolver(complete, candidates=3)
    new = store.remember(Fact(content="The user lives in Berlin now."), resolver=resolver)
    assert len(prompts) == 1 and paris in _ids_in(prompts[0])
    assert "The user lives in Berlin now." in prompts[0]
    assert {f.id for f in store.list()} == {new, tea}
    old = store.get(paris)
    assert old is not None and old.superseded_by == new


def test_a_null_answer_stores_the_fact_as_new(make_facts: MakeFacts) -> None:
    store = make_facts()
    seen: list[str] = []

    def complete(prompt: str) -> str:
        seen.extend(_ids_in(prompt))
        return '{"supersedes": null}'

    store.remember(Fact(content="The user drinks coffee."))
    store.remember(Fact(content="The user drinks tea."), resolver=ContradictionResolver(complete))
    assert len(seen) == 1 and store.count() == 2


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "not json",
        '["a list"]',
        '{"supersedes": 5}',
        '{"supersedes": "no-such-id"}',
        '{"other": "x"}',
    ],
)
def test_unusable_answers_store_the_fact_as_new(make_facts: MakeFacts, answer: str) -> None:
    store = make_facts()
    old = store.remember(Fact(content="The user lives in Paris."))
    resolver = ContradictionResolver(lambda _prompt: answer)
    new = store.remember(Fact(content="The user lives in Rome."), resolver=resolver)
    assert {f.id for f in store.list()} == {old, new}


def test_a_failing_model_stores_the_fact_as_new(make_facts: MakeFacts) -> None:
    store = make_facts()
    old = store.remember(Fact(content="The user lives in Paris."))

    def complete(prompt: str) -> str:
        raise TimeoutError("model down")

    new = store.remember(
        Fact(content="The user lives in Rome."), resolver=ContradictionResolver(complete)
    )
    assert {f.id for f in store.list()} == {old, new}


def test_no_candidates_no_model_call(make_facts: MakeFacts) -> None:
    store = make_facts()
    calls: list[str] = []
    resolver = ContradictionResolver(lambda p: calls.append(p) or "{}")
    store.remember(Fact(content="first ever fact"), resolver=resolver)
    assert calls == [] and store.count() == 1


def test_a_keyed_fact_does_not_ask_the_model(make_facts: MakeFacts) -> None:
    store = make_facts()
    store.remember(Fact(content="lives in Paris", key="user.city"))
    calls: list[str] = []
    resolver = ContradictionResolver(lambda p: calls.append(p) or "{}")
    store.remember(Fact(content="lives in Rome", key="user.city"), resolver=resolver)
    assert calls == []


def test_arguments_are_checked() -> None:
    with pytest.raises(InvalidArgumentError):
        ContradictionResolver("not callable")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        ContradictionResolver(lambda p: p, candidates=0)


def test_hybrid_is_used_when_the_store_has_an_embedder() -> None:
    import sqlmem

    with sqlmem.open(":memory:", embedder=HashEmbedder()) as db:
        old = db.facts.remember(Fact(content="The user is vegetarian."))
        seen: list[str] = []

        def complete(prompt: str) -> str:
            seen.extend(_ids_in(prompt))
            return json.dumps({"supersedes": old})

        new = db.facts.remember(
            Fact(content="vegetarian no more: eats fish"), resolver=ContradictionResolver(complete)
        )
        assert seen == [old]
        assert [f.id for f in db.facts.list()] == [new]


def test_the_extractor_reads_an_optional_key(make_facts: MakeFacts) -> None:
    from sqlmem import LLMExtractor, Message

    store = make_facts()
    answers = iter(
        [
            "[user.city] The user lives in Paris.\nThe user likes tea.",
            "- [user.city] The user lives in Berlin.",
        ]
    )
    extractor = LLMExtractor(lambda _prompt: next(answers))
    said = [Message(role="user", content="hi")]
    first = extractor.extract("s", said, store)
    assert [(f.key, f.content) for f in first] == [
        ("user.city", "The user lives in Paris."),
        ("", "The user likes tea."),
    ]
    extractor.extract("s", said, store)
    assert sorted(f.content for f in store.list()) == [
        "The user likes tea.",
        "The user lives in Berlin.",
    ]
