"""Hybrid history search ranks a message with the turns around it, the same on every backend.

In a conversation the turn that answers a question often shares few words and little
meaning with it: "When did Caroline go to the support group?" matches Melanie's "How was
the support group?" best, while Caroline's reply, the next turn, holds the answer and
placed lower in both rankings. So the fused score of each message (reciprocal rank fusion
of the BM25 and vector rankings) is lifted by half the fused score of its better
neighbour in its session (seq - 1 or seq + 1) among the messages the two rankings found.

- Half, so that a message's own placings count twice as much as a neighbour's: the turn
  that matched stays ahead of the reply it lifts unless the reply matched too.
- The better neighbour, not both: a turn belongs to one exchange, and summing both sides
  would lift the middle of any three matching turns above the best of them.
- Only messages the rankings found: a neighbour found by neither is not added. Adding them
  gained little on the conversation benchmark below and, where neighbours are unrelated
  (memories stored one after another), pushed answers out of the top 10; this way the
  rule needs nothing but the two rankings, and no extra read.

Measured on a long-conversation benchmark (five conversations, 760 questions, evidence
recall of the top 10): hybrid with all-MiniLM-L6-v2 rose from 65.3 to 69.4, with WordLlama
from 57.9 to 64.5. On our synthetic benchmark stored as history (memories in a shuffled
order, so neighbours are unrelated: the case where the lift can only hurt) recall of the
top 10 did not change.

Only hybrid ranks this way: mode "vector" keeps the cosine as its score and its order,
mode "any" is BM25 alone. What search returns is still the matching messages.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from ..search.vectors import RRF_K

__all__ = ["NEIGHBOUR_SHARE", "MessageKey", "lift_by_neighbours", "rank_with_neighbours"]

#: A message is identified across the legs by (session_id, seq), unique in a database.
MessageKey = tuple[str, int]

#: The share of its better neighbour's fused score a message gains (see the module
#: docstring).
NEIGHBOUR_SHARE = 0.5


def lift_by_neighbours(fused: Mapping[MessageKey, float]) -> dict[MessageKey, float]:
    """Every fused message, scored by its own fused value plus `NEIGHBOUR_SHARE` of its
    better neighbour's (a neighbour not among `fused` counts 0)."""
    lifted: dict[MessageKey, float] = {}
    for (session, seq), score in fused.items():
        better = max(fused.get((session, seq - 1), 0.0), fused.get((session, seq + 1), 0.0))
        lifted[(session, seq)] = score + NEIGHBOUR_SHARE * better
    return lifted


def rank_with_neighbours(
    lexical: Sequence[MessageKey], semantic: Sequence[MessageKey], top_k: int
) -> list[tuple[MessageKey, float]]:
    """The best `top_k` messages of the two legs, each once, with their lifted scores: the
    legs fused (`sum 1/(RRF_K + rank)`), each message lifted by its better neighbour.
    Ties: the better BM25 rank first (absent counts as last), then the better vector
    rank, as in fact search."""
    fused: dict[MessageKey, float] = {}
    last = len(lexical) + len(semantic) + 1
    lexical_rank: dict[MessageKey, int] = {}
    semantic_rank: dict[MessageKey, int] = {}
    for rank, key in enumerate(lexical, start=1):
        lexical_rank[key] = rank
        fused[key] = 1.0 / (RRF_K + rank)
    for rank, key in enumerate(semantic, start=1):
        semantic_rank[key] = rank
        fused[key] = fused.get(key, 0.0) + 1.0 / (RRF_K + rank)
    best = heapq.nsmallest(
        top_k,
        (
            (-score, lexical_rank.get(key, last), semantic_rank.get(key, last), key)
            for key, score in lift_by_neighbours(fused).items()
        ),
    )
    return [(key, -negated) for negated, _, _, key in best]
