"""The inspector in a real headless browser: Debian's Chromium driven by its chromedriver
through selenium (no browser download). Every page of a demo memory is opened from a real
`sqlmem ui` process; each must show its content, load its own CSS under the content
security policy, and leave no error in the browser console; in write mode, a revision is
restored by a click. Screenshots are saved under the test's tmp dir; with
SQLMEM_UI_SCREENSHOTS=docs the main ones are also copied to docs/assets/ui-*.png for the
documentation, with SQLMEM_UI_SCREENSHOTS=<folder> all of them to that folder (CI's
artifacts)."""

from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from test_hostile_content import HOSTILE_KEY, _fill_hostile
from ui_demo import CITY_KEY, SESSION, fill
from ui_server import running_ui

import sqlmem
from sqlmem.embedders import WordLlamaEmbedder

ROOT = Path(__file__).resolve().parents[2]
INSTALL = (
    "the browser test needs Debian's Chromium and its driver: "
    "apt-get install -y chromium chromium-driver (CI's .ci/run installs them)"
)

#: (screenshot name, path, query, texts the page must show). Named ones go to the docs.
#: A query value "{porto}" is the id of the demo's superseded fact. The overview's counts
#: arrive by a second request its script makes: the texts are awaited, not read at once.
PAGES: list[tuple[str, str, dict[str, Any], list[str]]] = [
    ("overview", "/", {}, ["Overview", "live facts", "messages archived"]),
    ("stats", "/stats", {}, ["messages archived", "schema_version"]),
    ("sessions", "/sessions", {}, ["chat:alice", "Alice (Lisbon, vegetarian)"]),
    ("session", "/session", {"id": SESSION}, ["archive boundary", "tool call", "weather"]),
    ("window", "/window", {"id": SESSION, "max_tokens": 4000}, ["Context window", "Booked"]),
    ("facts", "/facts", {}, ["The user is vegetarian.", "msg:chat:alice#1", CITY_KEY]),
    ("facts-filtered", "/facts", {"layer": "semantic", "tags": "profile"}, ["Lisbon"]),
    ("facts-chain", "/facts", {"key": CITY_KEY}, ["lives in Porto.", "superseded", "oldest"]),
    ("facts-then", "/facts", {"as_of": "2026-01-15"}, ["lives in Porto.", "valid at"]),
    ("facts-superseded", "/facts", {"state": "superseded"}, ["lives in Porto.", "superseded now"]),
    ("facts-expired", "/facts", {"state": "expired"}, ["tomorrow's weather.", "expire()"]),
    ("fact", "/fact", {"id": "{porto}"}, ["Supersession chain", "lives in Lisbon.", "onboarding"]),
    ("documents", "/documents", {}, ["MEMORY.md", "notes/2026-11-27.md"]),
    ("document", "/document", {"path": "MEMORY.md", "a": 1, "b": 3}, ["Diff 1 → 3", "Alfama"]),
    ("search", "/search", {"q": "vegetarian food"}, ["BM25 leg", "Vector leg", "Fused"]),
    ("pack", "/pack", {"q": "Any restaurant ideas for me?", "budget": 300}, ["Diagnostics"]),
]
DOCS_SHOTS = {"overview", "session", "facts", "fact", "document", "search", "pack"}


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} not found: {INSTALL}")
    return found


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # selenium must never fetch a browser or driver
    options = webdriver.ChromeOptions()
    options.binary_location = _binary("chromium")
    profile = tmp_path_factory.mktemp("chromium-profile")
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(_binary("chromedriver")))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ui-screenshots")


def _demo_file(folder: Path) -> tuple[Path, str]:
    """The demo memory with vectors, and the id of its superseded fact."""
    path = folder / "memory.db"
    with sqlmem.open(path, embedder=WordLlamaEmbedder()) as db:
        fill(db)
        db.facts.embed_pending()
        porto = db.facts.history(key=CITY_KEY)[0]
    assert porto.superseded_by is not None
    return path, porto.id


def _shows(driver: Any, texts: list[str], name: str) -> None:
    """Wait (10 s at most) until the page's text holds every one of `texts`."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def body() -> str:
        return str(driver.find_element(By.TAG_NAME, "body").text)

    # A click that submits a form replaces the page while we read it: the old body goes
    # stale between finding it and reading its text. Try again on the new page.
    waiting = WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,))
    try:
        waiting.until(lambda d: all(t in body() for t in texts))
    except TimeoutException:
        missing = [t for t in texts if t not in body()]
        raise AssertionError(f"{name}: {missing!r} not shown") from None


def _console_errors(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _screenshot(driver: Any, target: Path) -> None:
    """The whole page (up to 2,400 pixels tall), through the DevTools protocol."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    clip = {"x": 0, "y": 0, "width": 1280, "height": min(int(height), 2400), "scale": 1}
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
    )
    target.write_bytes(base64.b64decode(shot["data"]))


def test_every_page_in_a_real_browser(browser, shots, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    path, porto = _demo_file(tmp_path)
    with running_ui(path, "--embedder", "wordllama") as url:
        base = url.split("?")[0].rstrip("/")
        browser.get(url)  # the token URL: the cookie is set, the token leaves the URL
        assert "token=" not in browser.current_url
        _shows(browser, ["messages archived"], "start")  # its counts' request is done
        _console_errors(browser)  # start each page with an empty log
        for name, route, query, texts in PAGES:
            query = {k: porto if v == "{porto}" else v for k, v in query.items()}
            browser.get(base + route + (f"?{urlencode(query)}" if query else ""))
            _shows(browser, texts, name)
            header = browser.find_element(By.CSS_SELECTOR, "header.top")
            assert header.value_of_css_property("background-color") == "rgba(36, 41, 47, 1)", (
                f"{name}: the stylesheet did not load"
            )
            assert _console_errors(browser) == [], f"{name}: console errors"
            _screenshot(browser, shots / f"ui-{name}.png")
        # a link followed by the browser itself: a fact's reference to its message
        browser.get(base + "/facts")
        link = browser.find_element(By.CSS_SELECTOR, "a.ref[href^='/session']")
        seq = link.text.rsplit("#", 1)[1]
        link.click()
        assert browser.find_element(By.CSS_SELECTOR, ".msg.target").text.startswith(f"#{seq} ")
        # the overview's counts, loaded by its script into the page, are the real ones
        browser.get(base + "/")
        _shows(browser, ["messages archived"], "overview")
        cards = browser.find_elements(By.CSS_SELECTOR, "#stats .card")
        shown = {c.find_element(By.CLASS_NAME, "label").text: c.text for c in cards}
        with sqlmem.open(path) as db:
            stats = db.stats()
        assert shown["facts"].startswith(f"{stats['facts']:,}")
        assert shown["messages archived"].startswith(f"{stats['messages_archived']:,}")
        # the "show" filter chosen in the form, then an expired fact's own page, by clicks
        browser.get(base + "/facts")
        Select(browser.find_element(By.NAME, "state")).select_by_visible_text("expired")
        browser.find_element(By.CSS_SELECTOR, "form.filters button").click()
        _shows(browser, ["The expired facts", "tomorrow's weather."], "show expired")
        assert "state=expired" in browser.current_url
        assert "vegetarian" not in browser.find_element(By.TAG_NAME, "main").text
        browser.find_element(By.CSS_SELECTOR, "tr.expired td.content a").click()
        _shows(browser, ["Asked about tomorrow's weather.", "expired"], "expired fact")
        assert browser.find_element(By.CSS_SELECTOR, "h1 .badge").text == "expired"
        assert _console_errors(browser) == []
        # from a superseded fact to the fact that took over, by the browser's own click
        browser.get(base + f"/fact?id={porto}")
        browser.find_element(By.CSS_SELECTOR, "a.succ").click()
        _shows(browser, ["The user lives in Lisbon.", "supersedes"], "successor")
        assert _console_errors(browser) == []
    assert all((shots / f"ui-{name}.png").stat().st_size > 10_000 for name, *_ in PAGES)
    keep = os.environ.get("SQLMEM_UI_SCREENSHOTS", "")
    if keep == "docs":
        for name in DOCS_SHOTS:
            shutil.copyfile(shots / f"ui-{name}.png", ROOT / "docs" / "assets" / f"ui-{name}.png")
    elif keep:  # a folder for CI to keep as artifacts: every page's screenshot
        Path(keep).mkdir(parents=True, exist_ok=True)
        for name, *_ in PAGES:
            shutil.copyfile(shots / f"ui-{name}.png", Path(keep) / f"ui-{name}.png")


def test_hostile_memory_runs_no_script_in_the_browser(browser, tmp_path):
    path = tmp_path / "hostile.db"
    with sqlmem.open(path) as db:
        fill(db)
        fact_id = _fill_hostile(db)
        old = db.facts.history(key=HOSTILE_KEY)[0].id  # superseded, in a hostile chain
        db.facts.index(sqlmem.Fact(content='<img src=x onerror="window.pwned=1">'))
        db.facts.index(sqlmem.Fact(content="<script>window.pwned=2</script>"))
        expired = next(f for f in db.facts.list(state="expired") if "table> expired" in f.content)
        created = expired.created_at.isoformat()
        expired_link = f"/fact?{urlencode({'id': expired.id, 'created': created})}"
    with running_ui(path) as url:
        base = url.split("?")[0].rstrip("/")
        browser.get(url)
        pages = ["/", "/facts", f"/fact?id={fact_id}", "/sessions", "/search?q=img+script"]
        pages += [f"/facts?key={HOSTILE_KEY}", "/facts?as_of=2025-03-01", f"/fact?id={old}"]
        pages += ["/facts?state=expired", "/facts?state=all", f"/facts?key={HOSTILE_KEY}&state=all"]
        pages += [expired_link]
        for path_query in pages:
            browser.get(base + path_query)
            assert browser.execute_script("return window.pwned === undefined")
            assert browser.execute_script("return document.images.length") == 0
            if "hostile" in path_query or "as_of" in path_query or "state" in path_query:
                body = browser.find_element("tag name", "body").text  # shown, as text
                assert "<script>alert('x')</script>" in body, path_query
        assert "</table> expired" in browser.find_element("tag name", "body").text
        _console_errors(browser)


def test_restoring_a_revision_by_the_browser_in_write_mode(browser, tmp_path):
    from selenium.webdriver.common.by import By

    path, _ = _demo_file(tmp_path)
    with running_ui(path, "--write") as url:
        base = url.split("?")[0].rstrip("/")
        _console_errors(browser)  # an empty log to start with
        browser.get(url.replace("/?", "/document?path=MEMORY.md&"))  # the token, then the page
        assert browser.current_url == base + "/document?path=MEMORY.md"
        assert "read-write" in browser.find_element(By.CSS_SELECTOR, "header.top").text
        browser.find_element(By.CSS_SELECTOR, "button[form='restore-1']").click()
        _shows(browser, ["revision 4", "Alice lives in Lisbon."], "restored")
        assert "Alfama" not in browser.find_element(By.CSS_SELECTOR, "pre.doc").text
        assert _console_errors(browser) == []
    with sqlmem.open(path) as db:
        restored = db.docs.read("MEMORY.md")
        assert restored is not None and restored.revision == 4  # a restore is a new one
        assert restored.content == db.docs.read_revision("MEMORY.md", 1)
