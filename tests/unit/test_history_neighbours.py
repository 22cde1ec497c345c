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
def test_every_candidate_and_its_neighbours_are_ranked_once(
    lexical: list[Key], semantic: list[Key]
) -> None:
    ranked = rank_with_neighbours(lexical, semantic)
    found = [key for key, _ in ranked]
    assert len(found) == len(set(found))
    expected = set(lexical) | set(semantic)
    expected |= {(s, q + d) for s, q in expected for d in (-1, 1) if q + d >= 1}
    assert set(found) == expected
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True)


@given(legs, legs)
def test_no_message_scores_below_its_own_fusion(lexical: list[Key], semantic: list[Key]) -> None:
    fused = dict(reciprocal_rank_fusion(lexical, semantic, len(lexical) + len(semantic)))
    lifted = lift_by_neighbours(fused)
    for key, score in fused.items():
        neighbours = [fused.get((key[0], key[1] + d), 0.0) for d in (-1, 1)]
        assert lifted[key] == score + 0.5 * max(neighbours)


@given(st.lists(st.integers(0, 30), min_size=1, max_size=10, unique=True), st.booleans())
def test_far_apart_messages_keep_the_fusions_order(slots: list[int], swap: bool) -> None:
    """No two candidates adjacent: nothing lifts them, so they keep reciprocal rank
    fusion's order, and each neighbour follows below the message that lifts it."""
    lexical = [("a", 1 + 3 * slot) for slot in slots]
    semantic = list(reversed(lexical)) if swap else lexical[::2]
    fused = reciprocal_rank_fusion(lexical, semantic, len(lexical))
    ranked = rank_with_neighbours(lexical, semantic)
    candidates = set(lexical)
    assert [key for key, _ in ranked if key in candidates] == [key for key, _ in fused]
    position = {key: i for i, (key, _) in enumerate(ranked)}
    for session, seq in candidates:
        for near in ((session, seq - 1), (session, seq + 1)):
            if near in position:
                assert position[near] > position[(session, seq)]


def test_the_reply_to_a_first_place_outranks_a_lone_middling_match() -> None:
    # seq 1 is first in both legs; seq 2 (its reply) in neither; seq 9 is 5th in one leg
    lexical = [("a", 1), ("b", 20), ("b", 30), ("b", 40), ("a", 9)]
    semantic = [("a", 1)]
    found = [key for key, _ in rank_with_neighbours(lexical, semantic)]
    assert found.index(("a", 2)) < found.index(("a", 9))
    assert found[0] == ("a", 1)


def test_the_best_of_three_adjacent_matches_stays_first() -> None:
    """Lifting by the better neighbour only: summing both sides would put the middle turn
    of three (ranked 2nd) above the first."""
    semantic = [("a", 1), ("a", 2), ("a", 3)]
    assert rank_with_neighbours([], semantic)[0][0] == ("a", 1)


def test_ties_fall_to_bm25_then_vectors_then_position() -> None:
    # two messages each found only by one leg, at the same rank: equal fused scores
    ranked = rank_with_neighbours([("a", 10)], [("a", 20)])
    assert [key for key, _ in ranked[:2]] == [("a", 10), ("a", 20)]
    ranked = rank_with_neighbours([], [("a", 10)])
    # its two neighbours tie: the earlier comes first
    assert [key for key, _ in ranked] == [("a", 10), ("a", 9), ("a", 11)]
