"""The inspector's guard: an access token, CSRF for the write forms, and the headers.

Memory is user and model text, so the inspector treats every stored string as hostile
HTML (the templates autoescape it) and a local port as reachable by any page the person's
browser opens. So: every request needs the random token printed at start (in the URL once,
then in a strict same-site cookie), compared in constant time; a write needs a form field
derived from that token (another site's page cannot read it); and every response forbids
inline script, framing, MIME sniffing and referrers.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections.abc import Callable
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["COOKIE", "SECURITY_HEADERS", "TokenGuard", "csrf_token", "new_token", "valid_csrf"]

_log = logging.getLogger("sqlmem.ui")

COOKIE = "sqlmem_ui"
TOKEN_PARAMETER = "token"

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "cross-origin-opener-policy": "same-origin",
}


def new_token() -> str:
    """A fresh access token: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def csrf_token(token: str) -> str:
    """The write forms' hidden field: derived from the access token, so only a page the
    inspector served (which the token-holding browser can read) can carry it."""
    return hmac.new(token.encode(), b"sqlmem-ui-csrf", hashlib.sha256).hexdigest()


def valid_csrf(token: str, submitted: str) -> bool:
    return hmac.compare_digest(csrf_token(token).encode(), submitted.encode())


class TokenGuard:
    """ASGI middleware: refuses any request without the token and adds the headers.

    A request whose query carries the right token gets the cookie and a redirect to the
    same URL without it, so the token leaves the address bar (and the history) at once.
    """

    def __init__(self, app: ASGIApp, token: str, failure: Callable[[], Response]) -> None:
        self.app = app
        self.token = token
        self.failure = failure

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        response = self._gate(request)
        sending = _with_headers(send)
        if response is not None:
            await response(scope, receive, sending)
            return
        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await sending(message)

        try:
            await self.app(scope, receive, tracking)
        except Exception:  # a bug: logged; the browser gets a plain page with the headers
            _log.exception("%s %s failed", request.method, request.url.path)
            if started:
                raise
            await self.failure()(scope, receive, sending)

    def _gate(self, request: Request) -> Response | None:
        given = request.query_params.get(TOKEN_PARAMETER)
        if given is not None:
            if not self._matches(given):
                return _refused()
            rest = [(k, v) for k, v in parse_qsl(request.url.query) if k != TOKEN_PARAMETER]
            path = "/" + request.url.path.lstrip("/\\")  # never "//host": another site
            target = path + (f"?{urlencode(rest)}" if rest else "")
            redirect = RedirectResponse(target, status_code=303)
            redirect.set_cookie(COOKIE, self.token, httponly=True, samesite="strict", path="/")
            return redirect
        if not self._matches(request.cookies.get(COOKIE, "")):
            return _refused()
        return None

    def _matches(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.token.encode())


def _refused() -> Response:
    return PlainTextResponse(
        "Forbidden: open the inspector with the URL (and token) that 'sqlmem ui' printed.",
        status_code=403,
    )


def _with_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in SECURITY_HEADERS.items():
                headers[name] = value
        await send(message)

    return sending
