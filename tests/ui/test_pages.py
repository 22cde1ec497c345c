"""Every inspector page over the demo memory, on SQLite, in memory and on PostgreSQL."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from urllib.parse import parse_qsl, quote, unquote

import pytest
from ui_demo import SESSION

from sqlmem import Fact, Message


def test_every_page_shows_the_memory(any_db, make_client):
    client = make_client(any_db)
    overview = client.get("/")
    assert overview.status_code == 200
    live = any_db.facts.count()
    assert f'<div class="value">{live}</div><div class="label">live facts</div>' in overview.text
    assert 'data-load="/stats"' in overview.text and 'href="/stats"' in overview.text
    counts = client.get("/stats").text
    stats = any_db.stats()
    for key in ("sessions", "messages_active", "messages_archived", "facts", "documents"):
        label = key.replace("_", " ")
        assert f'<div class="value">{stats[key]:,}</div><div class="label">{label}</div>' in counts

    sessions = client.get("/sessions").text
    assert "chat:alice" in sessions and "chat:bob-2" in sessions
    assert "Alice (Lisbon, vegetarian) asked about weather." in sessions

    session = client.get("/session", params={"id": SESSION}).text
    assert "archive boundary" in session
    assert "weather" in session and "call_1" in session  # the tool call and its reply
    assert "Booked Ao 26 Vegan Food Project" in session
    assert 'class="summary"' in session

    window = client.get("/window", params={"id": SESSION, "max_tokens": 4000}).text
    assert "Book me a table somewhere nice on Friday." in window
    assert "tool call</span> <code" in window and "weather" in window  # #4's call

    facts = client.get("/facts").text
    for text in ("The user is vegetarian.", "The user lives in Lisbon.", "check the diet first"):
        assert text in facts
    booking = any_db.facts.search("Booked table", 1)[0]
    assert booking.expires_at is not None
    assert booking.expires_at.strftime("%Y-%m-%d %H:%M") in facts  # its expiry is shown

    documents = client.get("/documents").text
    assert "MEMORY.md" in documents and "notes/2026-11-27.md" in documents
    document = client.get("/document", params={"path": "MEMORY.md"}).text
    assert "Likes quiet restaurants." in document
    assert document.count('name="a"') == 3  # every revision, the current one included

    search = client.get("/search", params={"q": "vegetarian"}).text
    assert "BM25 leg" in search and "Vector leg" in search and "Fused ranking" in search
    assert "The user is vegetarian." in search
    assert "Noted: vegetarian." in search  # the history leg

    pack = client.get("/pack", params={"q": "vegetarian Lisbon", "budget": 500}).text
    assert "The user is vegetarian." in pack and "<meter" in pack and "Diagnostics" in pack


def test_fact_page_and_reference_links(demo_db, make_client):
    client = make_client(demo_db)
    fact = demo_db.facts.search("vegetarian", 1)[0]
    page = client.get("/fact", params={"id": fact.id}).text
    assert "The user is vegetarian." in page
    assert f'href="/session?id={quote(SESSION)}&amp;at=1"' in page
    assert 'href="/document?path=MEMORY.md&amp;rev=1"' in page
    assert client.get("/fact", params={"id": "missing"}).status_code == 404
    # following the links lands on the message and on the revision
    target = client.get("/session", params={"id": SESSION, "at": 1}).text
    assert 'class="msg user archived target" id="m1"' in target
    revision = client.get("/document", params={"path": "MEMORY.md", "rev": 1}).text
    assert "Revision 1" in revision and "Alfama" not in revision


def test_document_diff_between_any_two_revisions(demo_db, make_client):
    client = make_client(demo_db)
    page = client.get("/document", params={"path": "MEMORY.md", "a": 1, "b": 3}).text
    assert '<span class="t del" dir="auto">-- Alice lives in Lisbon.</span>' in page
    assert '<span class="t add" dir="auto">+- Likes quiet restaurants.</span>' in page
    backwards = client.get("/document", params={"path": "MEMORY.md", "a": 3, "b": 2}).text
    assert '<span class="t del" dir="auto">-- Likes quiet restaurants.</span>' in backwards
    same = client.get("/document", params={"path": "MEMORY.md", "a": 2, "b": 2}).text
    assert "The two revisions are the same." in same
    assert client.get("/document", params={"path": "MEMORY.md", "a": 9, "b": 1}).status_code == 404
    assert client.get("/document", params={"path": "nope.md"}).status_code == 404


@pytest.mark.parametrize(
    ("params", "present", "absent"),
    [
        ({"layer": "episodic"}, ["Booked a table"], ["The user is vegetarian."]),
        ({"kind": "howto"}, ["check the diet first"], ["The user lives in Lisbon."]),
        ({"tags": "profile"}, ["vegetarian", "Lisbon"], ["Booked a table"]),
        ({"tags": "diet, profile"}, ["vegetarian"], ["The user lives in Lisbon."]),
        ({"category": "food"}, ["vegetarian", "diet first"], ["Lisbon."]),
        ({"min_confidence": "0.85"}, ["vegetarian", "Lisbon"], ["Booked a table"]),
    ],
)
def test_fact_filters(demo_db, make_client, params, present, absent):
    page = make_client(demo_db).get("/facts", params=params).text
    for text in present:
        assert text in page
    for text in absent:
        assert text not in page


def _follow(client, params: dict[str, str]) -> tuple[list[list[str]], list[str]]:
    """Follow the facts pages' Next links to the end: each page's numbered facts, and
    each Next link's query."""
    pages: list[list[str]] = []
    links: list[str] = []
    while True:
        page = client.get("/facts", params=params).text
        pages.append(re.findall(r"numbered fact (\d{3})", page))
        assert len(pages[-1]) <= 50
        following = re.search(r'href="/facts\?([^"]+)">Next', page)
        if not following:
            return pages, links
        links.append(following.group(1).replace("&amp;", "&"))
        params = dict(parse_qsl(links[-1]))


@pytest.mark.parametrize("same_moment", [False, True])
def test_facts_are_paged_server_side(sqlite_db, make_client, same_moment):
    """The Next link carries a cursor (the last fact's creation time, and how many facts
    of that time were shown), so a deep page reads no row it skips; facts written as
    one batch share a creation time, and a page may start inside it."""

    def created(n: int) -> datetime:  # one moment for all, or four days of 30 facts
        return datetime(2026, 1, 1 if same_moment else 1 + n // 30, tzinfo=timezone.utc)

    sqlite_db.facts.index_many(
        Fact(content=f"numbered fact {n:03d}", created_at=created(n)) for n in range(120)
    )
    client = make_client(sqlite_db)
    pages, links = _follow(client, {})
    newest_first = [f"{n:03d}" for n in reversed(range(120))]
    assert [n for page in pages for n in page] == newest_first  # each once, in order
    assert [len(page) for page in pages] == [50, 50, 20]
    assert all("until=" in link and "skip=" in link for link in links)
    assert [dict(parse_qsl(link))["offset"] for link in links] == ["50", "100"]
    if same_moment:
        assert [dict(parse_qsl(link))["skip"] for link in links] == ["50", "100"]
    typed = client.get("/facts", params={"offset": 100}).text  # an offset still works
    assert re.findall(r"numbered fact (\d{3})", typed) == newest_first[100:]
    assert "Previous" in typed and "rows 101–120" in typed
    bad = client.get("/facts", params={"until": "soon"})
    assert bad.status_code == 400 and "until must be a date" in bad.text


def _walk(client, route: str, pattern: str) -> tuple[list[list[str]], str]:
    """Follow a keyset list's Next links to its end: the rows of every page, and the
    last page's HTML."""
    pages: list[list[str]] = []
    params: dict[str, str] = {}
    while True:
        page = client.get(route, params=params).text
        pages.append(re.findall(pattern, page))
        following = re.search(r'href="[^"?]+\?after=([^"]+)">Next', page)
        if not following:
            return pages, page
        params = {"after": unquote(following.group(1))}


def test_sessions_are_paged_by_id(sqlite_db, make_client):
    for n in range(0, 150, 2):
        sqlite_db.history.append(f"s-{n:03d}", Message(role="user", content="hello"))
    client = make_client(sqlite_db)
    pages, last = _walk(client, "/sessions", r">(s-\d{3})<")
    assert [len(p) for p in pages] == [50, 25]
    assert [n for p in pages for n in p] == [f"s-{n:03d}" for n in range(0, 150, 2)]
    # a session added before the page's cursor shifts nothing after it
    sqlite_db.history.append("s-001", Message(role="user", content="late"))
    second = client.get("/sessions", params={"after": pages[0][-1]}).text
    assert re.findall(r">(s-\d{3})<", second) == pages[1]
    # Previous from the last page ends just before its first row
    before = re.search(r'href="/sessions\?before=([^"]+)">← Previous', last)
    assert before is not None and unquote(before.group(1)) == pages[1][0]
    back = client.get("/sessions", params={"before": pages[1][0]}).text
    # the 50 sessions before it, the one added meanwhile among them
    assert re.findall(r">(s-\d{3})<", back) == ["s-001", *(f"s-{n:03d}" for n in range(2, 100, 2))]


def test_documents_are_paged_by_position(sqlite_db, make_client):
    for n in range(60):
        sqlite_db.docs.write(f"notes/n{n:02d}.md", f"note {n}")
    sqlite_db.docs.set_sort_order("notes/n59.md", -1)  # listed first
    client = make_client(sqlite_db)
    pages, _ = _walk(client, "/documents", r">notes/(n\d\d)\.md<")
    assert [n for p in pages for n in p] == ["n59", *(f"n{n:02d}" for n in range(59))]
    assert [len(p) for p in pages] == [50, 10]


def test_a_long_session_is_paged_by_seq(sqlite_db, make_client):
    history = sqlite_db.history
    history.append_many(
        "long", [Message(role="user", content=f"line {n:03d}") for n in range(1, 131)]
    )
    history.compact("long", keep_last=20, summary="the first 110 lines")
    client = make_client(sqlite_db)
    page = client.get("/session", params={"id": "long"}).text
    seen = re.findall(r"line (\d{3})", page)
    assert seen == [f"{n:03d}" for n in range(81, 131)]  # the newest page
    assert "archive boundary" in page
    pages = [seen]
    while (older := re.search(r"before=(\d+)\">← Older", page)) is not None:
        page = client.get("/session", params={"id": "long", "before": older.group(1)}).text
        pages.append(re.findall(r"line (\d{3})", page))
    assert sorted(n for p in pages for n in p) == [f"{n:03d}" for n in range(1, 131)]
    newer = re.search(r"start=(\d+)\">Newer", page)
    assert newer is not None
    forward = client.get("/session", params={"id": "long", "start": newer.group(1)}).text
    assert re.findall(r"line (\d{3})", forward)[0] == f"{int(pages[-1][-1]) + 1:03d}"


@pytest.mark.parametrize(
    "url",
    [
        "/facts?offset=x",
        "/facts?min_confidence=2",
        "/facts?offset=-1",
        "/session",
        "/session?id=chat:alice&before=abc",
        "/window",
        "/pack?q=x&budget=0",
    ],
)
def test_bad_parameters_get_a_plain_400(demo_db, make_client, url):
    response = make_client(demo_db).get(url)
    assert response.status_code == 400
    assert "Traceback" not in response.text


@pytest.mark.parametrize(
    ("reference", "target"),
    [
        ("msg:chat:alice#12", {"kind": "message", "session": "chat:alice", "seq": 12}),
        ("msg:a#b#3", {"kind": "message", "session": "a#b", "seq": 3}),
        (
            "doc:notes/2026-11-27.md@2",
            {"kind": "document", "path": "notes/2026-11-27.md", "revision": 2},
        ),
        ("msg:chat#", None),
        ("msg:#4", None),
        ("doc:MEMORY.md", None),
        ("javascript:alert(1)", None),
        ("https://example.com/x", None),
    ],
)
def test_references_that_link(reference, target):
    from sqlmem.ui.queries import parse_reference

    assert parse_reference(reference) == target
