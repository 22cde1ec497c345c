"""The facts-that-change benchmark runs and its answers are what the design promises at a
small size: a keyed memory answers "now" and "as of" right every time; the resolver's
depends on the old fact being among its candidates (most of the time); plain search, which
keeps every move live, is mostly wrong."""

from __future__ import annotations

import itertools

from benchmarks.facts_change import evaluate, generate, main


def test_generated_moves_are_dated_and_change_city() -> None:
    people, distractors = generate(30)
    assert len(people) == 30 and len(distractors) == 90
    for moves in people:
        assert 2 <= len(moves) <= 5
        assert all(a.at < b.at and a.city != b.city for a, b in itertools.pairwise(moves))


def test_keyed_and_resolver_answer_right_plain_does_not() -> None:
    results = evaluate(subjects=40)
    assert results["keyed"]["now"] == 1.0 and results["keyed"]["as_of"] == 1.0
    assert results["resolver"]["now"] > 0.9 and results["resolver"]["as_of"] > 0.9
    assert results["plain"]["now"] < 0.5
    assert results["keyed"]["facts_live"] == 40 * 4  # per person: city, likes, knows, museum


def test_main_prints_a_table(capsys: object) -> None:
    assert main(["--subjects", "10"]) == 0
