"""`sqlmem ui`: a local web inspector of one agent's memory (extra `sqlmem[ui]`).

    from sqlmem.ui import create_app
    app = create_app(db, token="...")  # an ASGI app; `sqlmem ui TARGET` serves one

It shows what the agent remembers and why: sessions with their archive boundary and
summary, facts with their layers and references, document revisions and their diffs,
the legs of a search side by side, the memory pack for a query and a session's context
window. Read-only unless asked to write; every request carries a random token.

Starlette, Jinja2 and uvicorn load only here, when the inspector is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import SqlmemError

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from ..protocols import Database

__all__ = ["MISSING_EXTRA", "create_app"]

MISSING_EXTRA = "the inspector needs the 'ui' extra: pip install 'sqlmem[ui]'"


def create_app(db: Database, *, token: str, write: bool = False, title: str = "") -> Starlette:
    """The inspector over `db` as an ASGI app. Every request must carry `token` (once in
    the URL as `?token=...`, then as the cookie that sets); with `write=False` it changes
    nothing. Raises `SqlmemError` naming the extra when Starlette or Jinja2 is missing."""
    try:
        from .app import create_app as create
    except ImportError as exc:
        raise SqlmemError(f"{MISSING_EXTRA} ({exc.name} is missing)") from None
    return create(db, token=token, write=write, title=title)
