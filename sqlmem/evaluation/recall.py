"""Evidence recall of conversation search: how often the turns that answer a question are
among the first k messages `history.search` returns.

Each conversation goes into its own memory file, as an agent's memory would hold it: one
history session per conversation session, each turn a message (the first speaker's as
"user", the other's as "assistant", the speaker's name in `name`, the session's date in
`created_at`). Then every question is searched in every mode over the whole file, and for
each k the share of the question's evidence turns found in the top k is averaged over all
questions (of all the conversations chosen).

Latency is the search call as an agent makes it (top 10), query embedding included: each
mode runs on a freshly opened database, so no query vector comes from the cache of another
mode's run. Two medians are kept: wall-clock time, and the CPU time of the calling thread
(`time.thread_time`; onnxruntime pinned to one thread runs its work there), which a
machine shared with other busy processes inflates far less.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..records import Fact, Message
from .conversations import Conversation

__all__ = ["DEPTHS", "ModeResult", "measure"]

#: The k of recall@k reported.
DEPTHS = (5, 10, 25)
#: The timed search asks for the stores' default top_k; recall is read from a second,
#: untimed search of `max(DEPTHS)` results (whose query vector the first one cached).
TIMED_TOP_K = 10

Searcher = Callable[[Any, str, int, str], list[str]]


@dataclass
class ModeResult:
    """One row of the table: a mode of one kind of search."""

    kind: str  # "history" or "facts"
    mode: str
    found: dict[int, float] = field(default_factory=dict)  # sum of per-question recall
    questions: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)

    def recall(self, k: int) -> float:
        """Recall@k in percent."""
        return 100.0 * self.found.get(k, 0.0) / self.questions if self.questions else 0.0

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.latencies_ms) if self.latencies_ms else 0.0

    @property
    def cpu_p50_ms(self) -> float:
        return statistics.median(self.cpu_ms) if self.cpu_ms else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "mode": self.mode,
            **{f"recall@{k}": round(self.recall(k), 1) for k in DEPTHS},
            "p50_ms": round(self.p50_ms, 3),
            "cpu_p50_ms": round(self.cpu_p50_ms, 3),
            "questions": self.questions,
        }


def measure(
    conversations: Sequence[Conversation],
    folder: Path,
    *,
    modes: Sequence[str],
    embedder: Any = None,
    facts: bool = False,
    progress: Callable[[str], object] | None = None,
) -> list[ModeResult]:
    """Recall and latency per mode over `conversations`, memory files under `folder`."""
    from ..sqlite.db import open as open_db

    kinds = ("history", "facts") if facts else ("history",)
    results = {(kind, mode): ModeResult(kind, mode) for kind in kinds for mode in modes}
    for index, conversation in enumerate(conversations):
        path = folder / f"conversation-{index}.db"
        with open_db(path, embedder=embedder) as db:
            by_key = _write(db, conversation, facts)
        for (kind, mode), result in results.items():
            with open_db(path, embedder=embedder) as db:  # a cold query-vector cache
                _ask(db, conversation, by_key, kind, mode, result)
        if progress is not None:
            progress(f"{conversation.name}: {len(conversation.questions)} questions")
    return list(results.values())


def _write(db: Any, conversation: Conversation, facts: bool) -> dict[tuple[str, int], str]:
    """The conversation as history (and as one fact per turn with `facts`); returns the
    turn id of each stored message by (session, seq)."""
    by_key: dict[tuple[str, int], str] = {}
    first_speaker = conversation.speakers[0]
    for session in conversation.sessions:
        session_id = f"session-{session.number}"
        messages = [
            Message(
                role="user" if turn.speaker == first_speaker else "assistant",
                content=turn.text,
                name=turn.speaker,
                created_at=session.started + timedelta(seconds=i) if session.started else None,
            )
            for i, turn in enumerate(session.turns)
        ]
        if not messages:
            continue
        seqs = db.history.append_many(session_id, messages)
        by_key.update(
            ((session_id, seq), turn.dia_id) for seq, turn in zip(seqs, session.turns, strict=True)
        )
        if facts:
            db.facts.index_many(
                [Fact(id=t.dia_id, content=t.text, source=t.speaker) for t in session.turns]
            )
    return by_key


def _ask(
    db: Any,
    conversation: Conversation,
    by_key: dict[tuple[str, int], str],
    kind: str,
    mode: str,
    result: ModeResult,
) -> None:
    store = db.history if kind == "history" else db.facts
    for question in conversation.questions:
        started, cpu = time.perf_counter(), time.thread_time()
        store.search(question.text, top_k=TIMED_TOP_K, mode=mode)  # as an agent asks
        result.latencies_ms.append((time.perf_counter() - started) * 1000.0)
        result.cpu_ms.append((time.thread_time() - cpu) * 1000.0)
        found = store.search(question.text, top_k=max(DEPTHS), mode=mode)
        if kind == "history":
            ids = [by_key.get((m.session_id, m.seq), "") for m in found]
        else:
            ids = [f.id for f in found]
        result.questions += 1
        for k in DEPTHS:
            share = len(question.evidence.intersection(ids[:k])) / len(question.evidence)
            result.found[k] = result.found.get(k, 0.0) + share
