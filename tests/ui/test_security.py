"""The inspector's guard: the token, read-only mode, CSRF, headers, static files, and
error pages that never show a traceback."""

from __future__ import annotations

import pytest
from conftest import TOKEN, client_for
from starlette.testclient import TestClient

from sqlmem.ui import create_app
from sqlmem.ui.security import COOKIE, csrf_token

PAGES = ["/", "/sessions", "/facts", "/documents", "/search", "/pack", "/static/ui.css"]


@pytest.mark.parametrize("path", PAGES)
def test_requests_without_the_token_are_refused(demo_db, path):
    client = TestClient(create_app(demo_db, token=TOKEN))
    assert client.get(path).status_code == 403
    assert client.get(path, params={"token": "wrong"}).status_code == 403
    for wrong in (TOKEN[:-1], TOKEN + "x", ""):
        client.cookies.set(COOKIE, wrong)
        refused = client.get(path)
        assert refused.status_code == 403
        assert "vegetarian" not in refused.text


def test_the_token_in_the_url_becomes_a_cookie_and_leaves_the_url(demo_db):
    client = TestClient(create_app(demo_db, token=TOKEN), follow_redirects=False)
    first = client.get("/facts", params={"layer": "semantic", "token": TOKEN})
    assert first.status_code == 303
    assert first.headers["location"] == "/facts?layer=semantic"
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    page = client.get("/facts", params={"layer": "semantic"})
    assert page.status_code == 200 and "The user is vegetarian." in page.text


async def _raw_get(app, path: str, query: str) -> dict:
    """One GET straight into the ASGI app, its path as given (a client would normalise
    "//host/x" into another host)."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": query.encode(), "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8765),
    }  # fmt: skip
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]


async def test_the_token_redirect_stays_on_this_site(demo_db):
    app = create_app(demo_db, token=TOKEN)
    for path in ("//evil.example/x", "///evil.example", "/\\evil.example"):
        start = await _raw_get(app, path, f"token={TOKEN}&a=1")
        assert start["status"] == 303
        location = dict(start["headers"])[b"location"].decode()
        assert location.startswith("/") and not location.startswith("//"), location
        assert "\\" not in location[:2]


def test_security_headers_on_every_response(demo_db):
    client = client_for(demo_db)
    for response in (
        client.get("/"),
        client.get("/nope"),
        client.get("/static/ui.css"),
        TestClient(create_app(demo_db, token=TOKEN)).get("/"),  # a refusal too
    ):
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert "frame-ancestors 'none'" in csp
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"


def test_pages_carry_no_inline_script_or_style(demo_db):
    client = client_for(demo_db)
    for path in ["/", "/sessions", "/facts", "/documents", "/search?q=vegetarian", "/pack?q=x"]:
        html = client.get(path).text
        assert "<script>" not in html and " style=" not in html and "<style" not in html
        assert html.count("<script") == 1 and '<script src="/static/ui.js"></script>' in html


@pytest.mark.parametrize(
    "path",
    [
        "/static/../app.py",
        "/static/%2e%2e/app.py",
        "/static/..%2fapp.py",
        "/static/templates",
        "/static/ui.css.map",
        "/static//etc/passwd",
        "/static/%2fetc%2fpasswd",
    ],
)
def test_only_its_own_static_files_are_served(demo_db, path):
    response = client_for(demo_db).get(path)
    assert response.status_code == 404
    assert "import" not in response.text and "root:" not in response.text


def test_static_assets_are_served_with_their_types(demo_db):
    client = client_for(demo_db)
    assert client.get("/static/ui.css").headers["content-type"].startswith("text/css")
    assert client.get("/static/ui.js").headers["content-type"].startswith("text/javascript")


def _revision_one(db) -> str:
    return db.docs.read_revision("MEMORY.md", 1)


def test_read_only_refuses_writes(demo_db):
    client = client_for(demo_db)
    before = demo_db.docs.read("MEMORY.md")
    form = {"path": "MEMORY.md", "revision": "1", "csrf": csrf_token(TOKEN)}
    refused = client.post("/document/restore", data=form)
    assert refused.status_code == 403 and "read-only" in refused.text
    assert demo_db.docs.read("MEMORY.md") == before
    assert client.get("/document/restore").status_code == 405
    assert "restore" not in client.get("/document", params={"path": "MEMORY.md"}).text.lower()


def test_write_mode_restores_with_the_csrf_field_only(demo_db):
    client = client_for(demo_db, write=True, follow_redirects=False)
    page = client.get("/document", params={"path": "MEMORY.md"}).text
    assert f'name="csrf" value="{csrf_token(TOKEN)}"' in page
    before = demo_db.docs.read("MEMORY.md")
    for csrf in ("", "forged", csrf_token("another-token")):
        form = {"path": "MEMORY.md", "revision": "1", "csrf": csrf}
        assert client.post("/document/restore", data=form).status_code == 403
    assert demo_db.docs.read("MEMORY.md") == before
    # a foreign page's form carries the cookie only when the browser sends it cross-site;
    # without the token cookie at all the request is refused before the form is read
    stranger = TestClient(create_app(demo_db, token=TOKEN, write=True))
    form = {"path": "MEMORY.md", "revision": "1", "csrf": csrf_token(TOKEN)}
    assert stranger.post("/document/restore", data=form).status_code == 403
    done = client.post("/document/restore", data=form)
    assert done.status_code == 303 and done.headers["location"] == "/document?path=MEMORY.md"
    restored = demo_db.docs.read("MEMORY.md")
    assert restored is not None and restored.content == _revision_one(demo_db)
    assert restored.revision == before.revision + 1  # a restore is a new revision


class _Broken:
    """A database whose stats fail with a message that must not reach the page."""

    def __init__(self, db):
        self._db = db

    def __getattr__(self, name):
        return getattr(self._db, name)

    def stats(self):
        raise RuntimeError("secret /home/alice/private.db detail")


def test_failures_show_a_plain_page_and_are_logged(demo_db, caplog):
    client = TestClient(create_app(_Broken(demo_db), token=TOKEN), raise_server_exceptions=False)
    response = client.get("/stats", params={"token": TOKEN})
    assert response.status_code == 500
    assert "Traceback" not in response.text and "secret" not in response.text
    assert "Something went wrong" in response.text
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert any("secret" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


def test_store_errors_show_their_message_escaped(demo_db):
    response = client_for(demo_db).get("/session", params={"id": "<b>x</b>" * 100})
    assert response.status_code in (200, 400)
    assert "<b>x</b>" not in response.text
