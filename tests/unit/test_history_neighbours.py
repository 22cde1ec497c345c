"""The ranking of hybrid history search (`rules.history_neighbours`): reciprocal rank
fusion of the two legs, each message lifted by half its better neighbour's fused score."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sqlmem.rules.history_neighbours import lift_by_neighbours, rank_with_neighbours
from sqlmem.search.vectors import reciprocal_rank_fusion

Key = tuple[str, int]

keys = st.tuples(st.sampled_from(["a", "b"]), st.integers(1, 12))
legs = st.lists(keys, max_size=10, unique=True)


@given(legs, legs)
def test_every_message_of_the_legs_is_ranked_once_and_no_other(
    lexical: list[Key], semantic: list[Key]
) -> None:
    ranked = rank_with_neighbours(lexical, semantic, 100)
    found = [key for key, _ in ranked]
    assert len(found) == len(set(found))
    assert set(found) == set(lexical) | set(semantic)
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True)
    assert rank_with_neighbours(lexical, semantic, 3) == ranked[:3]


@given(legs, legs)
def test_no_message_scores_below_its_own_fusion(lexical: list[Key], semantic: list[Key]) -> None:
    fused = dict(reciprocal_rank_fusion(lexical, semantic, len(lexical) + len(semantic)))
    lifted = lift_by_neighbours(fused)
    for key, score in fused.items():
        neighbours = [fused.get((key[0], key[1] + d), 0.0) for d in (-1, 1)]
        assert lifted[key] == score + 0.5 * max(neighbours)


@given(st.lists(st.integers(0, 30), min_size=1, max_size=10, unique=True), st.booleans())
def test_far_apart_messages_keep_the_fusions_order(slots: list[int], swap: bool) -> None:
    """No two messages adjacent: nothing lifts them, so hybrid is reciprocal rank fusion."""
    lexical = [("a", 1 + 2 * slot) for slot in slots]
    semantic = list(reversed(lexical)) if swap else lexical[::2]
    fused = reciprocal_rank_fusion(lexical, semantic, len(lexical))
    assert rank_with_neighbours(lexical, semantic, len(lexical)) == fused


def test_the_reply_to_a_first_place_outranks_middling_matches() -> None:
    # seq 1 is first in both legs; its reply, seq 2, is last in the vector leg
    lexical = [("a", 1), ("b", 20), ("b", 30), ("b", 40), ("a", 9)]
    semantic = [("a", 1), ("c", 5), ("c", 7), ("a", 9), ("a", 2)]
    found = [key for key, _ in rank_with_neighbours(lexical, semantic, 10)]
    assert found[:2] == [("a", 1), ("a", 2)]
    assert [key for key, _ in reciprocal_rank_fusion(lexical, semantic, 10)][-1] == ("a", 2)


def test_the_best_of_three_adjacent_matches_stays_first() -> None:
    """Lifting by the better neighbour only: summing both sides would put the middle turn
    of three (ranked 2nd) above the first."""
    semantic = [("a", 1), ("a", 2), ("a", 3)]
    assert rank_with_neighbours([], semantic, 1)[0][0] == ("a", 1)


def test_ties_fall_to_the_bm25_rank_then_the_vector_rank() -> None:
    # each found by one leg at the same rank: equal scores, the BM25 one first
    ranked = rank_with_neighbours([("a", 10)], [("a", 20)], 2)
    assert [key for key, _ in ranked] == [("a", 10), ("a", 20)]
    # the same placings swapped between the legs: equal scores, BM25 decides
    ranked = rank_with_neighbours([("b", 5), ("a", 5)], [("a", 5), ("b", 5)], 2)
    assert ranked[0][1] == ranked[1][1]
    assert [key for key, _ in ranked] == [("b", 5), ("a", 5)]
