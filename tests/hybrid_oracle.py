"""What hybrid history search must return, computed here from the store's own two legs
without the package's ranking code: reciprocal rank fusion (k = 10) of the BM25 and
vector rankings, each message then lifted by half the fused score of its better neighbour
in its session (seq - 1 or seq + 1), a neighbour neither leg found taking part through that lift
alone; ties by BM25 rank, vector rank, then (session, seq); messages that no longer exist
left out."""

from __future__ import annotations

from collections.abc import Callable, Sequence

Key = tuple[str, int]


def expected_hybrid(
    lexical: Sequence[Key], semantic: Sequence[Key], top_k: int, exists: Callable[[Key], bool]
) -> list[tuple[Key, float]]:
    fused: dict[Key, float] = {}
    for leg in (lexical, semantic):
        for rank, key in enumerate(leg, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (10 + rank)
    candidates = set(fused)
    for session, seq in fused:
        candidates.update({(session, seq - 1), (session, seq + 1)})
    lifted = {
        (s, q): fused.get((s, q), 0.0)
        + 0.5 * max(fused.get((s, q - 1), 0.0), fused.get((s, q + 1), 0.0))
        for s, q in candidates
        if q >= 1
    }
    last = len(lexical) + len(semantic) + 1
    lex_rank = {key: r for r, key in enumerate(lexical, start=1)}
    sem_rank = {key: r for r, key in enumerate(semantic, start=1)}
    order = sorted(
        lifted, key=lambda k: (-lifted[k], lex_rank.get(k, last), sem_rank.get(k, last), k)
    )
    return [(key, lifted[key]) for key in order if exists(key)][:top_k]
