"""Templates: Jinja2 with autoescaping on for every template, whatever its name, because
every stored text (messages, facts, documents, session ids) may hold hostile HTML."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse

from ..context import estimate_tokens
from . import fact_views, queries
from .security import csrf_token

__all__ = ["Renderer"]


def _link(route: str, /, **params: Any) -> str:
    """A URL of this inspector with its query (None and "" values left out)."""
    kept = {k: v for k, v in params.items() if v is not None and v != ""}
    return route + (f"?{urlencode(kept)}" if kept else "")


def _when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def _minute(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M")


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:.4g}"


class Renderer:
    """Renders a page of the inspector with the values every page needs."""

    def __init__(self, token: str, write: bool, title: str) -> None:
        self.env = Environment(
            loader=PackageLoader("sqlmem.ui", "templates"),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.globals.update(
            link=_link,
            preview=queries.preview,
            reference=queries.parse_reference,
            expired=fact_views.is_expired,
            superseded=fact_views.is_superseded,
            tokens=estimate_tokens,
            write=write,
            csrf=csrf_token(token),
            title=title,
            fact_columns=queries.FACT_COLUMNS,
            fact_states=fact_views.STATES,
        )
        self.env.filters.update(when=_when, minute=_minute, number=_number)

    def __call__(
        self, name: str, request: Request, status: int = 200, **context: Any
    ) -> HTMLResponse:
        html = self.env.get_template(name).render(path=request.url.path, **context)
        return HTMLResponse(html, status_code=status)

    def error(self, status: int, message: str) -> HTMLResponse:
        html = self.env.get_template("error.html").render(path="", status=status, message=message)
        return HTMLResponse(html, status_code=status)
