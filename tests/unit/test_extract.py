"""LLMExtractor and NopExtractor: prompt, parsing, stable ids, storing once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import sqlmem
from sqlmem.context.extract import (
    ExtractionError,
    Extractor,
    LLMExtractor,
    NopExtractor,
    fact_id,
    normalise_fact,
    parse_facts,
)
from sqlmem.errors import SqlmemError
from sqlmem.protocols import FactStore
from sqlmem.records import Message, ToolCall

S = "telegram:12345:"

EXCHANGE = [
    Message(role="system", content="You are a helpful assistant. SECRET-INSTRUCTIONS"),
    Message(role="user", content="I just moved to Lisbon with my dog Rex."),
    Message(
        role="assistant",
        content="",
        tool_calls=[ToolCall(id="c1", name="weather", arguments='{"city": "Lisbon"}')],
    ),
    Message(role="tool", content="Sunny, 24C", tool_call_id="c1"),
    Message(role="assistant", content="Welcome to Lisbon! It is sunny today."),
]


@pytest.fixture(params=["memory", "sqlite"])
def facts(request: pytest.FixtureRequest, open_db: Callable[..., sqlmem.MemoryDB]) -> FactStore:
    if request.param == "memory":
        from sqlmem.inmemory.facts import InMemoryFactStore

        return InMemoryFactStore()
    return open_db().facts


class FakeLLM:
    def __init__(self, reply: object = "") -> None:
        self.reply = reply
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if isinstance(self.reply, BaseException):
            raise self.reply
        return self.reply  # type: ignore[return-value]


# -- parsing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "fact"),
    [
        ("The user likes tea", "The user likes tea"),
        ("- The user likes tea", "The user likes tea"),
        ("* The user likes tea", "The user likes tea"),
        ("• The user likes tea", "The user likes tea"),
        ("1. The user likes tea", "The user likes tea"),
        ("12. The user likes tea", "The user likes tea"),
        ("3) The user likes tea", "The user likes tea"),
        ("   -   The user likes tea   ", "The user likes tea"),
        ("-\tThe user likes tea", "The user likes tea"),
        ("-- The user likes tea", "-- The user likes tea"),
        ("--verbose is the user's favourite flag", "--verbose is the user's favourite flag"),
        ("- - nested marker", "- nested marker"),
        ("-5 degrees is the user's limit", "-5 degrees is the user's limit"),
        ("*args lover", "*args lover"),
        ("1.5 million users use the user's app", "1.5 million users use the user's app"),
        ("2024. was a good year", "was a good year"),
    ],
)
def test_parse_one_line(line: str, fact: str) -> None:
    assert parse_facts(line) == [fact]


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "\n\n",
        "NONE",
        "none",
        "None.",
        "  NONE  ",
        "- NONE",
        "1. none",
        "-",
        "*",
        "1.",
        "\n- \n",
    ],
)
def test_nothing_to_remember(answer: str) -> None:
    assert parse_facts(answer) == []


def test_parse_many_lines_skips_blanks_none_and_repeats() -> None:
    answer = (
        "1. The user lives in Lisbon\r\n"
        "\n"
        "2. The user has a dog called Rex\n"
        "NONE\n"
        "- the user lives in lisbon.\n"
        "   \n"
        "-- keep me\n"
    )
    assert parse_facts(answer) == [
        "The user lives in Lisbon",
        "The user has a dog called Rex",
        "-- keep me",
    ]


def test_lone_surrogates_are_dropped_from_model_output() -> None:
    assert parse_facts("- The user \ud83d likes tea") == ["The user  likes tea"]


# -- ids ---------------------------------------------------------------------------------


def test_fact_id_is_stable_and_normalised() -> None:
    a = fact_id("The user likes tea.")
    assert a == fact_id("the  USER likes\ttea")
    assert a == fact_id("The user likes tea")
    assert a == fact_id("Ｔｈｅ user likes tea")  # full-width letters (NFKC)
    assert a != fact_id("The user likes coffee")
    assert a.startswith("fact-") and len(a) == len("fact-") + 32


def test_normalise_fact() -> None:
    assert normalise_fact("  The  User\nlikes TEA. ") == "the user likes tea"
    assert normalise_fact("Straße") == normalise_fact("STRASSE")


# -- LLMExtractor ------------------------------------------------------------------------


def test_prompt_asks_for_facts_about_the_user_and_carries_the_exchange() -> None:
    llm = FakeLLM("NONE")
    LLMExtractor(llm).extract(S, EXCHANGE)
    [prompt] = llm.prompts
    assert "facts about the user" in prompt
    assert "one fact per line" in prompt.lower() or "own line" in prompt
    assert "NONE" in prompt
    assert "user: I just moved to Lisbon with my dog Rex." in prompt
    assert "assistant: Welcome to Lisbon! It is sunny today." in prompt
    assert 'weather({"city": "Lisbon"})' in prompt
    assert "tool: Sunny, 24C" in prompt
    assert "SECRET-INSTRUCTIONS" not in prompt
    assert prompt == LLMExtractor(llm).prompt(EXCHANGE)


def test_extract_without_store_returns_every_fact() -> None:
    llm = FakeLLM("- The user lives in Lisbon\n- The user has a dog called Rex\n")
    facts = LLMExtractor(llm).extract(S, EXCHANGE)
    assert [f.content for f in facts] == [
        "The user lives in Lisbon",
        "The user has a dog called Rex",
    ]
    assert all(f.source == S for f in facts)
    assert [f.id for f in facts] == [fact_id(f.content) for f in facts]


def test_none_answer_stores_nothing(facts: FactStore) -> None:
    assert LLMExtractor(FakeLLM("NONE")).extract(S, EXCHANGE, facts) == []
    assert facts.count() == 0


def test_no_messages_no_model_call() -> None:
    llm = FakeLLM("- should not be asked")
    assert LLMExtractor(llm).extract(S, []) == []
    assert LLMExtractor(llm).extract(S, [Message(role="system", content="rules")]) == []
    assert llm.prompts == []


def test_extract_with_store_indexes_new_facts_once(facts: FactStore) -> None:
    llm = FakeLLM("- The user lives in Lisbon\n- The user has a dog called Rex\n")
    extractor = LLMExtractor(llm)

    first = extractor.extract(S, EXCHANGE, facts)
    assert [f.content for f in first] == [
        "The user lives in Lisbon",
        "The user has a dog called Rex",
    ]
    assert facts.count() == 2
    stored = facts.get(first[0].id)
    assert stored is not None
    assert stored.content == "The user lives in Lisbon" and stored.source == S

    assert extractor.extract(S, EXCHANGE, facts) == []
    assert facts.count() == 2

    llm.reply = "1. the user lives in lisbon.\n2. The user's dog Rex is three years old\n"
    third = extractor.extract(S, EXCHANGE, facts)
    assert [f.content for f in third] == ["The user's dog Rex is three years old"]
    assert facts.count() == 3
    assert [f.content for f in facts.search("Lisbon")] == ["The user lives in Lisbon"]


def test_same_fact_from_another_session_is_stored_once(facts: FactStore) -> None:
    llm = FakeLLM("- The user likes tea")
    LLMExtractor(llm).extract("chat:a", EXCHANGE, facts)
    assert LLMExtractor(llm).extract("chat:b", EXCHANGE, facts) == []
    assert facts.count() == 1
    stored = facts.get(fact_id("The user likes tea"))
    assert stored is not None and stored.source == "chat:a"


def test_rerun_after_restart_adds_nothing(tmp_path: Path) -> None:
    llm = FakeLLM("- The user lives in Lisbon\n- The user has a dog called Rex")
    with sqlmem.open(tmp_path / "memory.db") as db:
        assert len(LLMExtractor(llm).extract(S, EXCHANGE, db.facts)) == 2
    with sqlmem.open(tmp_path / "memory.db") as db:
        assert LLMExtractor(llm).extract(S, EXCHANGE, db.facts) == []
        assert db.facts.count() == 2


def test_failing_completion_raises_extraction_error_with_cause(facts: FactStore) -> None:
    cause = TimeoutError("model timed out")
    with pytest.raises(ExtractionError, match="TimeoutError: model timed out") as info:
        LLMExtractor(FakeLLM(cause)).extract(S, EXCHANGE, facts)
    assert info.value.__cause__ is cause
    assert isinstance(info.value, SqlmemError)
    assert facts.count() == 0


def test_non_text_completion_raises_extraction_error() -> None:
    with pytest.raises(ExtractionError, match="NoneType"):
        LLMExtractor(FakeLLM(None)).extract(S, EXCHANGE)


def test_complete_must_be_callable() -> None:
    with pytest.raises(TypeError, match="complete"):
        LLMExtractor("gpt-4")  # type: ignore[arg-type]


# -- NopExtractor and the protocol -------------------------------------------------------


def test_nop_extractor_returns_nothing_and_stores_nothing(facts: FactStore) -> None:
    assert NopExtractor().extract(S, EXCHANGE) == []
    assert NopExtractor().extract(S, EXCHANGE, facts) == []
    assert facts.count() == 0


def test_both_extractors_satisfy_the_protocol() -> None:
    assert isinstance(NopExtractor(), Extractor)
    assert isinstance(LLMExtractor(FakeLLM()), Extractor)
