"""The search modes of a conversation's history, checked alike by every history store.

Apart from the vector code on purpose: a store opened without an embedder must not load
numpy (tests/unit/test_import_time.py), and checking a mode needs none.

- "any" (the default): BM25 over the messages holding any word of the query.
- "vector": cosine of the query's vector with each message's, `score` the cosine.
- "hybrid": reciprocal rank fusion of the two, as fact search fuses them.

A message gets a vector when it has text: a tool call alone carries nothing to embed, and
`message_needs_vector` is the one rule every backend (and its SQL, `content <> ''`) uses,
so `stats()` counts the same messages as missing everywhere.

What is embedded is `vector_text`: the message's text after its speaker's name and its
date, "Caroline (8 May 2023): I went to a support group yesterday". Questions about a
conversation name people and times ("When did Caroline go to the support group?"); a
turn's own words rarely repeat the speaker's name, and never the day it was said. On a
long-conversation benchmark (five conversations, 760 questions) this lifted vector recall
of the top 10 from 31 to 49 with WordLlama and hybrid from 51 to 58, above BM25 alone
(55). BM25 ("any") still indexes the text alone: its ranking does not change.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

from ..errors import InvalidArgumentError
from ..protocols import HistoryMode
from ..records import Message
from .encoding import dt_to_ms

__all__ = [
    "HISTORY_MODES",
    "HistoryMode",
    "check_history_mode",
    "message_needs_vector",
    "needs_embedder_error",
    "vector_text",
    "vector_text_ms",
    "vector_texts",
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


#: Month names spelled out in English whatever the process's locale, so that one message
#: gets the same vector on every machine.
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


def vector_text(content: str, name: str, created_at: datetime | None) -> str:
    """The text a message's vector is computed from (see the module docstring); "" for a
    message that gets no vector."""
    if not message_needs_vector(content):
        return ""
    head = name
    if created_at is not None:
        day = created_at.astimezone(timezone.utc)
        head = f"{head} ({day.day} {_MONTHS[day.month - 1]} {day.year})".lstrip()
    return f"{head}: {content}" if head else content


def vector_text_ms(content: str, name: str, created_ms: int) -> str:
    """`vector_text` of a stored row, whose time is unix milliseconds."""
    return vector_text(content, name, datetime.fromtimestamp(created_ms / 1000, timezone.utc))


def vector_texts(messages: Sequence[Message], now_ms: int) -> list[str]:
    """`vector_text` of messages about to be appended at `now_ms` (their time when they
    carry none)."""
    return [
        vector_text_ms(
            m.content, m.name, now_ms if m.created_at is None else dt_to_ms(m.created_at)
        )
        for m in messages
    ]


def needs_embedder_error(what: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"history {what} needs an embedder: open the database with embedder=... "
        "(for example sqlmem.open(path, embedder=WordLlamaEmbedder()))"
    )
