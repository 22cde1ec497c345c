"""The inspector as an ASGI application: `create_app(db)` over any `Database`.

Starlette with `debug=False` and handlers of its own for every error, so a failure shows
a plain page (and is logged) and never a traceback that would print stored text or paths.
Static assets are a fixed list of the package's own files: no URL can name another file.
"""

from __future__ import annotations

import logging
from importlib import resources

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..errors import SqlmemError
from ..protocols import Database
from .render import Renderer
from .routes import Pages
from .security import TokenGuard

__all__ = ["STATIC_FILES", "create_app"]

_log = logging.getLogger("sqlmem.ui")

#: Every file the inspector serves besides its pages, with its media type.
STATIC_FILES = {
    "ui.css": "text/css; charset=utf-8",
    "ui.js": "text/javascript; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


def _static(request: Request) -> Response:
    name = request.path_params["name"]
    media_type = STATIC_FILES.get(name)
    if media_type is None:
        raise HTTPException(404, "no such file")
    body = resources.files("sqlmem.ui").joinpath("static").joinpath(name).read_bytes()
    return Response(body, media_type=media_type)


def create_app(db: Database, *, token: str, write: bool = False, title: str = "") -> Starlette:
    """The inspector over `db`; every request must carry `token` (see `TokenGuard`)."""
    render = Renderer(token, write, title or "sqlmem")

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return render.error(exc.status_code, exc.detail)

    async def store_error(request: Request, exc: Exception) -> Response:
        _log.warning("%s %s: %s", request.method, request.url.path, exc)
        return render.error(400, str(exc))

    def failure() -> Response:  # TokenGuard logs the exception and sends this page
        return render.error(500, "Something went wrong; the server log has the details.")

    pages = Pages(db, render, token, write).routes()
    pages.append(Route("/static/{name}", _static, methods=["GET"]))
    return Starlette(
        debug=False,
        routes=pages,
        middleware=[Middleware(TokenGuard, token=token, failure=failure)],
        exception_handlers={HTTPException: http_error, SqlmemError: store_error},
    )
