"""What each inspector page shows, read from any `Database` through its public protocols.

Plain Python with no web framework in it, so the pages' data can be tested and timed on
its own. Every list is paged here, server-side: facts and a session's messages are read
a page (plus one row, which says whether a next page exists) at a time, so a page of a
file with a hundred thousand facts costs what a page of a small file costs. Sessions and
documents are paged by cursor: sessions are read a page at a time going forward (a
previous page, and documents, read one short column whole), and only the page's rows are
read further.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from ..context import ContextWindow, PackConfig, build_memory_pack, estimate_tokens
from ..doc_records import DocumentInfo
from ..errors import SqlmemError
from ..protocols import Database, HistoryStore, has_archive_boundary, has_vector_search
from ..records import Fact, Message
from .fact_views import FactFilters, fact_page, is_expired
from .paging import PAGE_SIZE, KeyPage, Page, key_page, paged

__all__ = [
    "FACT_COLUMNS",
    "PAGE_SIZE",
    "FactFilters",
    "KeyPage",
    "Page",
    "SearchLegs",
    "SessionView",
    "context_window",
    "document_diff",
    "document_page",
    "fact_page",
    "is_expired",
    "memory_pack",
    "overview",
    "paged",
    "parse_reference",
    "preview",
    "search_legs",
    "session_messages",
    "session_page",
]

#: How much of a stored text a list shows; the whole text is on the item's own page.
PREVIEW_CHARS = 600

#: The facts table's columns, in order: (heading, attribute of the row). "Valid" shows
#: the valid time and, for a superseded fact, the fact that took over.
FACT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Content", "content"),
    ("Layer", "layer"),
    ("Kind", "kind"),
    ("Key", "key"),
    ("Category", "category"),
    ("Tags", "tags"),
    ("Confidence", "confidence"),
    ("Valid", "valid_from"),
    ("Expires", "expires_at"),
    ("Came from", "references"),
)

_MESSAGE_REF = re.compile(r"^msg:(?P<session>.+)#(?P<seq>\d+)$", re.DOTALL)
_DOCUMENT_REF = re.compile(r"^doc:(?P<path>.+)@(?P<rev>\d+)$", re.DOTALL)


def preview(text: str, limit: int = PREVIEW_CHARS) -> tuple[str, int]:
    """The start of `text` and how many characters were left out."""
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def parse_reference(reference: str) -> dict[str, Any] | None:
    """Where a fact's reference points: a message (`msg:{session}#{seq}`) or a document
    revision (`doc:{path}@{rev}`); None for any other text (shown as plain text)."""
    found = _MESSAGE_REF.match(reference)
    if found:
        return {"kind": "message", "session": found["session"], "seq": int(found["seq"])}
    found = _DOCUMENT_REF.match(reference)
    if found:
        return {"kind": "document", "path": found["path"], "revision": int(found["rev"])}
    return None


def overview(db: Database) -> dict[str, Any]:
    """`stats()` as the backend reports it (every backend has the counts; a SQLite file
    adds its size, WAL and schema version). Its counts may read whole tables, so the
    overview page loads them as a request of their own."""
    return dict(db.stats())


@dataclass(frozen=True)
class SessionRow:
    session_id: str
    active: int
    summary: str


def session_page(
    db: Database, *, after: str | None = None, before: str | None = None, size: int = PAGE_SIZE
) -> KeyPage[SessionRow]:
    """A page of sessions (by id) with their active message counts and summaries; the
    page after the session `after` or before the session `before`.

    The first page and the next ones are one bounded read each
    (`sessions(after=, limit=)`: a page and one id, which says whether a next page
    exists); a previous page reads the ids up to where it ends (one short column).
    Counts and summaries are read for the page's sessions only.
    """
    if before is not None:
        ids = key_page(db.history.sessions(), str, str, before=before, size=size)
    else:
        found = db.history.sessions(after=after, limit=size + 1)
        following = found[size - 1] if len(found) > size else None
        ids = KeyPage(found[:size], following, found[0] if found and after else None)
    history = db.history
    rows = [SessionRow(sid, history.count(sid), history.get_summary(sid)) for sid in ids.rows]
    return KeyPage(rows, ids.after, ids.before)


def document_page(
    db: Database, *, after: str | None = None, before: str | None = None, size: int = PAGE_SIZE
) -> KeyPage[DocumentInfo]:
    """A page of documents in their listed order (sort order, then path), after or
    before the document whose path is given."""
    listed = db.docs.list()
    by_path = {d.path: d for d in listed}

    def position(path: str | None) -> tuple[int, str] | None:
        found = by_path.get(path) if path is not None else None
        return None if found is None else (found.sort_order, found.path)

    return key_page(
        listed,
        lambda d: (d.sort_order, d.path),
        lambda d: d.path,
        after=position(after),
        before=position(before),
        size=size,
    )


@dataclass(frozen=True)
class SessionView:
    """One page of a session's messages, oldest first, with the archive boundary: the seq
    up to which the messages are archived (0: none)."""

    session_id: str
    messages: list[Message]
    summary: str
    active: int
    archived_seq: int
    older_before: int | None  # `before=` of the previous (older) page, None at the start
    newer_start: int | None  # `start=` of the next (newer) page, None at the end


def session_messages(
    db: Database,
    session_id: str,
    *,
    before: int | None = None,
    start: int | None = None,
    at: int | None = None,
    size: int = PAGE_SIZE,
) -> SessionView:
    """A page of messages: around seq `at`, from seq `start`, ending just before seq
    `before`, or (none given) the newest page.

    Paged by seq through `around`, a bounded read per page whatever the session's length;
    the archive boundary is `archived_seq`, read without reading a message.
    """
    history = db.history
    if at is not None:
        half = size // 2
        messages = history.around(session_id, at, before=half, after=size - 1 - half)
    elif start is not None:
        messages = history.around(session_id, start, before=0, after=size - 1)
    elif before is not None:
        window = history.around(session_id, before, before=size, after=0)
        messages = [m for m in window if m.seq != before][-size:]
    else:
        newest = _newest_seq(db, session_id)
        messages = [] if newest is None else history.around(session_id, newest, before=size - 1)
    older = newer = None
    if messages and messages[0].seq is not None and messages[-1].seq is not None:
        first, last = messages[0].seq, messages[-1].seq
        if len(history.around(session_id, first, before=1, after=0)) > 1:
            older = first
        following = history.around(session_id, last, before=0, after=1)
        if len(following) > 1:
            newer = following[-1].seq
    return SessionView(
        session_id,
        messages,
        history.get_summary(session_id),
        history.count(session_id),
        _archived_seq(history, session_id),
        older,
        newer,
    )


def _archived_seq(history: HistoryStore, session_id: str) -> int:
    """The archive boundary, read by the store itself when it can; else from the oldest
    active message (all of them read: a third party's store) or, with none active, the
    newest archived one."""
    if has_archive_boundary(history):
        return history.archived_seq(session_id)
    active = history.count(session_id)
    if active:
        oldest = history.get_recent(session_id, active, pair_safe=False)[0].seq
        return 0 if oldest is None else oldest - 1
    archived = history.get_all(session_id, include_archived=True)
    return archived[-1].seq or 0 if archived else 0


def _newest_seq(db: Database, session_id: str) -> int | None:
    """The newest message's seq: the newest active one, or with none active the newest
    archived one (at the boundary, unless `pop` left a hole there: then read them all)."""
    history = db.history
    recent = history.get_recent(session_id, 1, pair_safe=False)
    if recent:
        return recent[-1].seq
    boundary = _archived_seq(history, session_id)
    if boundary and history.around(session_id, boundary, before=0, after=0):
        return boundary
    archived = history.get_all(session_id, include_archived=True)  # rare: all read
    return archived[-1].seq if archived else None


@dataclass(frozen=True)
class Ranked:
    """A search hit with its score and its rank in each leg (None: not in that leg)."""

    item: Fact | Message
    score: float | None
    ranks: dict[str, int | None]


@dataclass(frozen=True)
class SearchLegs:
    """One query's legs side by side: BM25, vector and the fused ranking, for facts;
    BM25 for history (messages have no vectors)."""

    bm25: list[Ranked]
    vector: list[Ranked] | None  # None: no embedder, so no vector leg
    fused: list[Ranked] | None
    history: list[Ranked]
    history_error: str | None


def search_legs(db: Database, query: str, top_k: int = 20) -> SearchLegs:
    """Run the query once per leg and note, for each hit, its rank in the others."""
    facts = db.facts
    bm25 = facts.search(query, top_k, mode="any")
    vector = fused = None
    if has_vector_search(db.facts):  # `facts` keeps the FactStore type for search
        vector = facts.search(query, top_k, mode="vector")
        fused = facts.search(query, top_k, mode="hybrid")
    legs = {"bm25": bm25, "vector": vector or [], "fused": fused or []}
    positions = {name: {f.id: i + 1 for i, f in enumerate(hits)} for name, hits in legs.items()}

    def ranked(hits: list[Fact]) -> list[Ranked]:
        return [
            Ranked(f, f.score, {name: pos.get(f.id) for name, pos in positions.items()})
            for f in hits
        ]

    history_error = None
    try:
        messages = db.history.search(query, top_k=top_k)
    except SqlmemError as exc:  # history search turned off for this store
        messages, history_error = [], str(exc)
    return SearchLegs(
        ranked(bm25),
        None if vector is None else ranked(vector),
        None if fused is None else ranked(fused),
        [Ranked(m, m.score, {"bm25": i + 1}) for i, m in enumerate(messages)],
        history_error,
    )


def memory_pack(db: Database, query: str, budget: int) -> dict[str, Any]:
    """The memory pack for `query` within `budget` tokens, each item with its tokens."""
    config = PackConfig(soft_budget_tokens=budget, max_budget_tokens=budget)
    pack = build_memory_pack(db.facts, query, config)
    items = [{"item": item, "tokens": estimate_tokens(item.fact.content)} for item in pack.items]
    return {"pack": pack, "items": items, "budget": budget}


def context_window(db: Database, session_id: str, max_tokens: int) -> dict[str, Any]:
    """What a `ContextWindow` of `max_tokens` would send for this session now. It has no
    summarizer or consolidator, so building it leaves out old messages but writes nothing."""
    window = ContextWindow(db.history, max_input_tokens=max_tokens)
    built = window.build(session_id, "", "")
    rows = [{"message": m, "tokens": estimate_tokens(m.content)} for m in built.messages]
    return {"built": built, "rows": rows, "max_tokens": max_tokens}


def document_diff(db: Database, path: str, old: int, new: int) -> list[str]:
    """A unified diff between two revisions of a document."""
    before = db.docs.read_revision(path, old).splitlines(keepends=False)
    after = db.docs.read_revision(path, new).splitlines(keepends=False)
    return list(
        difflib.unified_diff(before, after, f"{path}@{old}", f"{path}@{new}", lineterm="", n=3)
    )
