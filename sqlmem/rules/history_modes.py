"""The search modes of a conversation's history, checked alike by every history store.

Apart from the vector code on purpose: a store opened without an embedder must not load
numpy (tests/unit/test_import_time.py), and checking a mode needs none.

- "any" (the default): BM25 over the messages holding any word of the query.
- "vector": cosine of the query's vector with each message's, `score` the cosine.
- "hybrid": reciprocal rank fusion of the two, as fact search fuses them.

A message gets a vector when it has text: a tool call alone carries nothing to embed, and
`message_needs_vector` is the one rule every backend (and its SQL, `content <> ''`) uses,
so `stats()` counts the same messages as missing everywhere.
"""

from __future__ import annotations

from ..errors import InvalidArgumentError
from ..protocols import HistoryMode

__all__ = [
    "HISTORY_MODES",
    "HistoryMode",
    "check_history_mode",
    "message_needs_vector",
    "needs_embedder_error",
]

HISTORY_MODES: tuple[str, ...] = ("any", "vector", "hybrid")


def check_history_mode(mode: object) -> HistoryMode:
    if mode not in HISTORY_MODES:
        raise InvalidArgumentError(
            f"mode must be one of {', '.join(map(repr, HISTORY_MODES))}; got {mode!r}"
        )
    return mode  # type: ignore[return-value]


def message_needs_vector(content: str) -> bool:
    """Whether a message's text is embedded (see the module docstring)."""
    return content != ""


def needs_embedder_error(what: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"history {what} needs an embedder: open the database with embedder=... "
        "(for example sqlmem.open(path, embedder=WordLlamaEmbedder()))"
    )
