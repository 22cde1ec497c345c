"""`stats()`, `check()` and `maintain()` of the in-memory database.

The same result shapes as the SQLite and PostgreSQL databases' where they mean something
without a file: the counts of `stats()` (with `path` ":memory:"), a `check()` of what the
twins keep redundant (each session's sequence numbers against its counters, each fact
keyed by its own id), and `maintain()` expiring facts, the one periodic job a twin has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from ..rules.encoding import now_ms

if TYPE_CHECKING:
    from .twins import Twins

__all__ = ["CheckReport", "check", "maintain", "stats"]

PATH = ":memory:"


@dataclass
class CheckReport:
    """What `InMemoryDB.check()` found; `ok` is True when the twins agree with
    themselves."""

    path: str
    ok: bool
    problems: list[str] = field(default_factory=list)


def stats(db: Twins) -> dict[str, Any]:
    """The counts every backend reports (a twin has no pages, file or schema)."""
    history = db.history
    with db.atomic():  # one consistent view: every writer waits on the shared lock
        sessions = history.sessions()
        active = sum(history.count(s) for s in sessions)
        stored = sum(len(history.get_all(s, include_archived=True)) for s in sessions)
        facts = db.facts.count()
        # Rows waiting for `embed_pending`: none without an embedder, as on the other
        # backends (a BM25-only store is not missing anything).
        without_vectors = _facts_without_vectors(db) if db.facts.embedder is not None else 0
        messages_without = db.history.without_vectors() if db.history.embedder is not None else 0
        documents = len(db.docs.list())
    return {
        "path": PATH,
        "sessions": len(sessions),
        "messages_active": active,
        "messages_archived": stored - active,
        "facts": facts,
        "facts_without_vectors": without_vectors,
        "messages_without_vectors": messages_without,
        "documents": documents,
    }


def check(db: Twins) -> CheckReport:
    """Each session's messages in strictly increasing sequence, none past the last one
    handed out and the active ones counted as `count()` says; each fact stored under its
    own id."""
    problems: list[str] = []
    with db.atomic():
        problems.extend(_session_problems(db))
        problems.extend(_fact_problems(db))
    return CheckReport(path=PATH, ok=not problems, problems=problems)


def maintain(db: Twins) -> dict[str, Any]:
    """Delete the expired facts; returns what was done, as PostgreSQL's does."""
    return {"expired_facts": db.facts.expire()}


# The twins' own containers are read here (same package) rather than through new store
# methods: what a check compares is how each twin keeps its data.


def _facts_without_vectors(db: Twins) -> int:
    """Unexpired facts (superseded ones too: `as_of` searches rank them) with no vector, as
    the other backends count them."""
    now = now_ms()
    return sum(1 for d in db.facts._docs.values() if d.unexpired(now) and d.vector is None)


def _session_problems(db: Twins) -> list[str]:
    problems = []
    for session_id, session in db.history._sessions.items():
        seqs = [stored.seq for stored in session.messages]
        if any(a >= b for a, b in pairwise(seqs)):
            problems.append(f"session {session_id!r}: messages out of sequence order")
        if seqs and seqs[-1] > session.last:
            problems.append(f"session {session_id!r}: a message past the last sequence number")
        if session.archived > session.last:
            problems.append(f"session {session_id!r}: archived past the last sequence number")
    return problems


def _fact_problems(db: Twins) -> list[str]:
    return [
        f"fact {key!r} stored under another id ({doc.row.id!r})"
        for key, doc in db.facts._docs.items()
        if doc.row.id != key
    ]
