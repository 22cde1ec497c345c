"""The inspector's pages: each reads its parameters, asks `queries` for the data and
renders one template. The readers are plain methods (Starlette runs them in a thread) and
the one writer hands its write to a thread, so no store call stalls the event loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ..doc_records import RevisionInfo
from ..protocols import Database
from . import queries
from .fact_views import (
    Cursor,
    FactFilters,
    expired_fact,
    fact_chain,
    fact_page,
    parse_moment,
    parse_state,
)
from .render import Renderer
from .security import valid_csrf

__all__ = ["Pages"]

#: The budgets a person may ask for, in tokens (a pack or window above this is a typo).
MAX_BUDGET = 1_000_000


def _text(request: Request, name: str, default: str = "") -> str:
    return request.query_params.get(name, default).strip()


def _key(request: Request, name: str) -> str | None:
    """A list position: the id or path of the row a page starts after or ends before."""
    return request.query_params.get(name) or None


def _int(request: Request, name: str, default: int | None, low: int = 0) -> int | None:
    raw = request.query_params.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise HTTPException(400, f"{name} must be a whole number") from None
    if not low <= value <= 2**62:
        raise HTTPException(400, f"{name} must be between {low} and {2**62}")
    return value


def _float(request: Request, name: str) -> float | None:
    raw = request.query_params.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise HTTPException(400, f"{name} must be a number") from None
    if not 0.0 <= value <= 1.0:
        raise HTTPException(400, f"{name} must be between 0 and 1")
    return value


class Pages:
    """The handlers of one inspector over `db`, one method per page."""

    def __init__(self, db: Database, render: Renderer, token: str, write: bool) -> None:
        self.db, self.render, self.token, self.write = db, render, token, write

    def routes(self) -> list[Route]:
        pages: list[tuple[str, Callable[[Request], Any], list[str]]] = [
            ("/", self.overview, ["GET"]),
            ("/stats", self.stats, ["GET"]),
            ("/sessions", self.sessions, ["GET"]),
            ("/session", self.session, ["GET"]),
            ("/window", self.window, ["GET"]),
            ("/facts", self.facts, ["GET"]),
            ("/fact", self.fact, ["GET"]),
            ("/documents", self.documents, ["GET"]),
            ("/document", self.document, ["GET"]),
            ("/document/restore", self.restore, ["POST"]),
            ("/search", self.search, ["GET"]),
            ("/pack", self.pack, ["GET"]),
        ]
        return [Route(path, handler, methods=methods) for path, handler, methods in pages]

    def overview(self, request: Request) -> Response:
        """At once: what costs next to nothing. The counts of `stats()` (which may read
        every row, e.g. to find the facts without vectors) come from /stats, which the
        page's script loads into it, or a click on its link does without script."""
        return self.render("overview.html", request, live_facts=self.db.facts.count())

    def stats(self, request: Request) -> Response:
        return self.render("stats.html", request, stats=queries.overview(self.db))

    def sessions(self, request: Request) -> Response:
        page = queries.session_page(
            self.db, after=_key(request, "after"), before=_key(request, "before")
        )
        return self.render("sessions.html", request, page=page)

    def session(self, request: Request) -> Response:
        session_id = request.query_params.get("id", "")
        if not session_id:
            raise HTTPException(400, "which session? (id=...)")
        view = queries.session_messages(
            self.db,
            session_id,
            before=_int(request, "before", None, 1),
            start=_int(request, "start", None, 1),
            at=_int(request, "at", None, 1),
        )
        return self.render("session.html", request, view=view, at=_int(request, "at", None, 1))

    def window(self, request: Request) -> Response:
        session_id = request.query_params.get("id", "")
        if not session_id:
            raise HTTPException(400, "which session? (id=...)")
        max_tokens = min(_int(request, "max_tokens", 8000, 1) or 8000, MAX_BUDGET)
        data = queries.context_window(self.db, session_id, max_tokens)
        return self.render("window.html", request, session_id=session_id, **data)

    def facts(self, request: Request) -> Response:
        tags = [t.strip() for t in _text(request, "tags").split(",") if t.strip()]
        filters = FactFilters(
            layer=_text(request, "layer") or None,
            kind=_text(request, "kind") or None,
            tags=tags,
            category=_text(request, "category") or None,
            min_confidence=_float(request, "min_confidence"),
            key=_text(request, "key") or None,
            as_of=parse_moment(_text(request, "as_of")),
            # `superseded=1`: the links of inspectors before the "show" filter
            state=parse_state(_text(request, "state"))
            or ("superseded" if _text(request, "superseded") not in ("", "0") else None),
        )
        until = parse_moment(_text(request, "until"), "until")  # the Next link's cursor
        cursor = None if until is None else Cursor(until, _int(request, "skip", 0) or 0)
        page = fact_page(self.db, filters, _int(request, "offset", 0) or 0, cursor=cursor)
        return self.render("facts.html", request, page=page, filters=filters)

    def fact(self, request: Request) -> Response:
        fact_id = request.query_params.get("id", "")
        found = self.db.facts.get(fact_id)
        created = parse_moment(_text(request, "created"))
        if found is None and created is not None:  # `get` skips expired facts
            found = expired_fact(self.db, fact_id, created)
        if found is None:
            raise HTTPException(404, "no such fact: never stored, or deleted")
        chain = fact_chain(self.db, found)
        return self.render("fact.html", request, fact=found, chain=chain)

    def documents(self, request: Request) -> Response:
        page = queries.document_page(
            self.db, after=_key(request, "after"), before=_key(request, "before")
        )
        return self.render("documents.html", request, page=page)

    def document(self, request: Request) -> Response:
        path = request.query_params.get("path", "")
        current = self.db.docs.read(path) if path else None
        if current is None:
            raise HTTPException(404, "no such document")
        now = RevisionInfo(
            revision=current.revision, size=current.size, updated_at=current.updated_at
        )
        revisions = [now, *(r for r in self.db.docs.revisions(path) if r.revision != now.revision)]
        numbers = {r.revision for r in revisions}
        old, new = _int(request, "a", None, 1), _int(request, "b", None, 1)
        shown = _int(request, "rev", None, 1)
        if any(n is not None and n not in numbers for n in (old, new, shown)):
            raise HTTPException(404, "no such revision")
        diff = queries.document_diff(self.db, path, old, new) if old and new else None
        content = self.db.docs.read_revision(path, shown) if shown else current.content
        return self.render(
            "document.html",
            request,
            document=current,
            revisions=revisions,
            diff=diff,
            old=old,
            new=new,
            shown=shown,
            content=content,
        )

    async def restore(self, request: Request) -> Response:
        if not self.write:
            raise HTTPException(403, "read-only: start 'sqlmem ui' with --write to restore")
        form = await request.form()
        if not valid_csrf(self.token, str(form.get("csrf", ""))):
            raise HTTPException(403, "the form is stale or foreign: reload the page")
        path, revision = str(form.get("path", "")), str(form.get("revision", ""))
        if not revision.isdigit():
            raise HTTPException(400, "revision must be a whole number")
        await run_in_threadpool(self.db.docs.restore, path, int(revision))  # off the loop
        return RedirectResponse(f"/document?{urlencode({'path': path})}", status_code=303)

    def search(self, request: Request) -> Response:
        query = _text(request, "q")
        legs = queries.search_legs(self.db, query) if query else None
        return self.render("search.html", request, query=query, legs=legs)

    def pack(self, request: Request) -> Response:
        query = _text(request, "q")
        budget = min(_int(request, "budget", 1800, 1) or 1800, MAX_BUDGET)
        data = queries.memory_pack(self.db, query, budget) if query else None
        return self.render("pack.html", request, query=query, budget=budget, data=data)
