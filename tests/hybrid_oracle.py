"""What hybrid history search must return, computed here from the store's own two legs
without the package's ranking code: reciprocal rank fusion (k = 10) of the BM25 and
vector rankings, each message then lifted by half the fused score of its better neighbour
in its session (seq - 1 or seq + 1; a neighbour neither leg found counts 0 and is not
added); ties by BM25 rank, then vector rank."""

from __future__ import annotations

from collections.abc import Sequence

Key = tuple[str, int]


def expected_hybrid(
    lexical: Sequence[Key], semantic: Sequence[Key], top_k: int
) -> list[tuple[Key, float]]:
    fused: dict[Key, float] = {}
    for leg in (lexical, semantic):
        for rank, key in enumerate(leg, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (10 + rank)
    lifted = {
        (s, q): fused[(s, q)] + 0.5 * max(fused.get((s, q - 1), 0.0), fused.get((s, q + 1), 0.0))
        for s, q in fused
    }
    last = len(lexical) + len(semantic) + 1
    lex_rank = {key: r for r, key in enumerate(lexical, start=1)}
    sem_rank = {key: r for r, key in enumerate(semantic, start=1)}
    order = sorted(lifted, key=lambda k: (-lifted[k], lex_rank.get(k, last), sem_rank.get(k, last)))
    return [(key, lifted[key]) for key in order][:top_k]
