"""Memory is user and model text: every stored string must render as inert text.

Facts, messages, tool calls, summaries, session ids, tags, document paths and contents
hold script tags, attribute breakouts, 1 MB texts, right-to-left overrides and zero-width
characters; every page is parsed and must hold only the elements and attributes the
inspector's own templates make."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser

from conftest import client_for
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlmem import Fact, Message
from sqlmem.records import ToolCall

SCRIPT = "<script>alert('x')</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
RTL = "\u202eevil\u202c gnp.exe"
ZERO_WIDTH = "pay\u200bpal\u200d\ufeff"
HOSTILE = f"{SCRIPT} {BREAKOUT} {RTL} {ZERO_WIDTH} javascript:alert(2) </td></table>"
HUGE = ("<b>big</b> " * 100_000)[:1_000_000]
SESSION = f"s{BREAKOUT}"
PATH = "notes/hostile.md"  # the store allows only plain paths
HOSTILE_KEY = "hostile.slot"  # keys are letters, digits and . - _ : only
HOSTILE_CHAIN_TIMES = [
    datetime(2025, 1, 1, tzinfo=timezone.utc),
    datetime(2025, 6, 1, tzinfo=timezone.utc),
]

#: Every element the templates make; anything else came from stored text.
OUR_TAGS = {
    "html", "head", "meta", "title", "link", "body", "header", "nav", "a", "span", "main",
    "h1", "h2", "h3", "section", "div", "table", "thead", "tbody", "tr", "th", "td", "p",
    "form", "label", "select", "option", "input", "button", "code", "pre", "ol", "li",
    "script", "meter", "br",
}  # fmt: skip


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[dict[str, str | None]] = []
        self.bidi_texts: list[bool] = []  # for each text holding bidi/zero-width: isolated?

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in ("meta", "link", "input", "br"):
            self.stack.append(dict(attrs))

    def handle_endtag(self, tag):
        if self.stack and tag not in ("meta", "link", "input", "br"):
            self.stack.pop()

    def handle_data(self, data):
        if any(c in data for c in "\u202e\u200b"):
            self.bidi_texts.append(
                any(a.get("dir") == "auto" or "t" in (a.get("class") or "").split()
                    for a in self.stack)
            )  # fmt: skip


def assert_inert(html: str, where: str = "") -> _Page:
    page = _Page()
    page.feed(html)
    for tag, attrs in page.tags:
        assert tag in OUR_TAGS, f"{where}: stored text made a <{tag}> element"
        for name, value in attrs.items():
            assert not name.startswith("on"), f"stored text made an {name} attribute"
            assert not (value or "").lower().startswith("javascript:")
        if tag == "script":
            assert attrs == {"src": "/static/ui.js"}
        if tag in ("a", "link") and "href" in attrs:
            assert (attrs["href"] or "").startswith("/")
    assert all(page.bidi_texts), f"{where}: bidi or zero-width text outside an isolated span"
    return page


def _fill_hostile(db) -> str:
    db.history.append_many(
        SESSION,
        [
            Message(role="user", content=HOSTILE, name=BREAKOUT),
            Message(
                role="assistant",
                tool_calls=[ToolCall(id=BREAKOUT, name=SCRIPT, arguments=HOSTILE)],
            ),
            Message(role="tool", content=HUGE, tool_call_id=BREAKOUT),
            Message(role="assistant", content=RTL),
        ],
    )
    db.history.compact(SESSION, keep_last=2, summary=HOSTILE)
    ids = db.facts.index_many(
        [
            Fact(
                content=HOSTILE,
                tags=[SCRIPT, RTL],
                source=BREAKOUT,
                metadata={"x": SCRIPT},
                references=[f"msg:{SESSION}#1", f"doc:{PATH}@1", BREAKOUT, "javascript:alert(3)"],
            ),
            Fact(content=HUGE),
            Fact(  # expired: shown by the "show expired" filter until deleted
                content=f"{HOSTILE} expired",
                tags=[SCRIPT],
                source=BREAKOUT,
                references=[BREAKOUT],
                expires_at=datetime.now(timezone.utc) - timedelta(hours=1),
            ),
        ]
    )
    db.docs.write(PATH, HOSTILE)
    db.docs.write(PATH, HUGE)
    for n, moment in enumerate(HOSTILE_CHAIN_TIMES):  # a chain: supersession and valid time
        db.facts.remember(
            Fact(
                content=f"{HOSTILE} {RTL} #{n}",
                key=HOSTILE_KEY,
                source=SCRIPT,
                tags=[BREAKOUT],
                references=[f"msg:{SESSION}#{n + 1}", f"doc:{PATH}@{n + 1}", BREAKOUT],
                valid_from=moment,
            )
        )
    return ids[0]


def test_hostile_text_renders_inert_on_every_page(demo_db):
    fact_id = _fill_hostile(demo_db)
    chain = demo_db.facts.history(key=HOSTILE_KEY)
    assert len(chain) == 2 and chain[0].superseded_by == chain[1].id
    (expired,) = [f for f in demo_db.facts.list(state="expired") if SCRIPT in f.tags]
    client = client_for(demo_db)
    pages = {
        "/": {},
        "/sessions": {},
        "/session": {"id": SESSION},
        "/session?at": {"id": SESSION, "at": 1},
        "/window": {"id": SESSION},
        "/facts": {},
        "/facts?filtered": {"tags": SCRIPT},
        "/facts?key": {"key": HOSTILE_KEY},
        "/facts?as_of": {"as_of": "2025-03-01"},
        "/facts?superseded": {"as_of": "2025-03-01", "state": "superseded"},
        "/facts?expired": {"state": "expired"},
        "/facts?all": {"state": "all"},
        "/facts?key&all": {"key": HOSTILE_KEY, "state": "all"},
        "/fact": {"id": fact_id},
        "/fact?superseded": {"id": chain[0].id},
        "/fact?live": {"id": chain[1].id},
        "/fact?expired": {"id": expired.id, "created": expired.created_at.isoformat()},
        "/stats": {},
        "/documents": {},
        "/document": {"path": PATH},
        "/document?diff": {"path": PATH, "a": 1, "b": 2},
        "/search": {"q": "alert script img"},
        "/search?hostile": {"q": HOSTILE},
        "/pack": {"q": "alert script", "budget": 100_000},
    }
    for name, params in pages.items():
        response = client.get(name.split("?")[0], params=params)
        assert response.status_code == 200, name
        html = response.text
        assert_inert(html, name)
        assert SCRIPT not in html and "<img" not in html and "<b>big</b>" not in html
        if name in ("/facts?key", "/facts?as_of", "/facts?superseded", "/fact?superseded"):
            assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html, name  # shown
            assert "superseded</span>" in html, name
        if name in ("/facts?expired", "/facts?all", "/fact?expired"):
            assert "&lt;/td&gt;&lt;/table&gt; expired" in html, name  # shown, escaped
            assert "expired</span>" in html, name
    for name, params, status in [
        ("/facts", {"category": BREAKOUT, "kind": SCRIPT}, 400),  # the store refuses these
        ("/document", {"path": SCRIPT}, 400),
        ("/fact", {"id": SCRIPT}, 404),
        ("/fact", {"id": SCRIPT, "created": SCRIPT}, 400),
        ("/fact", {"id": SCRIPT, "created": "2026-01-01"}, 404),
        ("/facts", {"state": SCRIPT}, 400),
        ("/facts", {"until": SCRIPT, "skip": "1"}, 400),
        ("/facts", {"until": "2026-01-01", "skip": SCRIPT}, 400),
    ]:
        refused = client.get(name, params=params)
        assert refused.status_code == status
        assert_inert(refused.text)
        assert SCRIPT not in refused.text and "<img" not in refused.text
    facts = client.get("/facts").text
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in facts  # shown, escaped
    assert len(facts) < 200_000  # the 1 MB fact is previewed in lists
    huge = client.get("/fact", params={"id": demo_db.facts.search("big", 1)[0].id}).text
    assert huge.count("&lt;b&gt;big&lt;/b&gt;") == HUGE.count("<b>big</b>")  # all of it
    assert "\u202eevil" in client.get("/session", params={"id": SESSION}).text  # kept as is


def test_hostile_references_link_only_inside_the_inspector(demo_db):
    fact_id = _fill_hostile(demo_db)
    page = assert_inert(client_for(demo_db).get("/fact", params={"id": fact_id}).text)
    hrefs = [a["href"] for tag, a in page.tags if tag == "a" and a.get("class") == "ref"]
    assert len(hrefs) == 2  # the message and the document; the rest are plain text
    assert all(h.startswith(("/session?id=", "/document?path=")) for h in hrefs)


_html_text = st.text(
    alphabet=st.sampled_from(list("<>\"'&=/ ;:abcdeimnoprstx-!\u202e\u200b\n")), max_size=80
)


@settings(max_examples=60, deadline=None)
@given(content=_html_text, source=_html_text)
def test_any_text_renders_as_text(demo_db, content, source):
    fact_id = demo_db.facts.index(Fact(content=f"x{content}", source=source))
    client = client_for(demo_db)
    assert_inert(client.get("/fact", params={"id": fact_id}).text)
    assert_inert(client.get("/facts").text)
