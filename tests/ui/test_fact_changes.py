"""Facts that change, in the inspector: valid time, the supersession chain of a key, the
facts of an earlier moment, the "show" filter (superseded, expired, all) and where each
fact came from."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from urllib.parse import quote

import pytest
from ui_demo import CITY_KEY, MOVED, SESSION

from sqlmem import Fact


def _ids(db):
    chain = db.facts.history(key=CITY_KEY)
    assert [f.content for f in chain] == ["The user lives in Porto.", "The user lives in Lisbon."]
    return chain[0], chain[1]


def test_live_facts_show_valid_time_and_their_key(any_db, make_client):
    _, lisbon = _ids(any_db)
    page = make_client(any_db).get("/facts").text
    assert "The user lives in Lisbon." in page and "The user lives in Porto." not in page
    assert f'href="/fact?id={lisbon.id}"' in page
    assert f'href="/facts?key={CITY_KEY}"' in page
    assert MOVED.strftime("%Y-%m-%d %H:%M") in page  # Lisbon is valid from the move


def test_a_key_shows_its_whole_chain_oldest_first(any_db, make_client):
    porto, lisbon = _ids(any_db)
    page = make_client(any_db).get("/facts", params={"key": CITY_KEY}).text
    assert page.index("The user lives in Porto.") < page.index("The user lives in Lisbon.")
    rows = re.findall(r'<tr( class="\w+")?>\s*<td class="content">', page)
    assert rows == [' class="superseded"', ""]  # Porto is history, Lisbon is live
    assert f'href="/fact?id={lisbon.id}"' in page  # Porto's "superseded by"
    assert porto.valid_to is not None
    assert porto.valid_to.strftime("%Y-%m-%d %H:%M") in page  # Porto valid until the move
    superseded = make_client(any_db).get("/facts", params={"key": CITY_KEY, "superseded": "1"}).text
    assert "The user lives in Porto." in superseded and "lives in Lisbon." not in superseded


def test_valid_at_an_earlier_moment(any_db, make_client):
    client = make_client(any_db)
    before_move = (MOVED - timedelta(days=30)).strftime("%Y-%m-%d")
    then = client.get("/facts", params={"as_of": before_move}).text
    assert "The user lives in Porto." in then and "The user lives in Lisbon." not in then
    assert 'class="superseded"' in then and "superseded</span> by" in then
    only = client.get("/facts", params={"as_of": before_move, "state": "superseded"}).text
    assert "The user lives in Porto." in only and "The user is vegetarian." not in only
    assert "only those superseded" not in only and "The facts superseded now among" in only
    legacy = client.get("/facts", params={"as_of": before_move, "superseded": "1"}).text
    assert legacy.count('<td class="content">') == only.count('<td class="content">') == 1
    now = client.get("/facts", params={"as_of": datetime.now(timezone.utc).isoformat()}).text
    assert "The user lives in Lisbon." in now and "The user lives in Porto." not in now


def test_the_fact_page_shows_the_chain_and_provenance(any_db, make_client):
    porto, lisbon = _ids(any_db)
    client = make_client(any_db)
    old = client.get("/fact", params={"id": porto.id}).text
    assert "superseded</span>" in old and f'href="/fact?id={lisbon.id}"' in old
    assert "Supersession chain" in old and "(2 facts, oldest first)" in old
    assert "onboarding form" in old and "no references" in old
    new = client.get("/fact", params={"id": lisbon.id}).text
    assert f'<a class="pred" href="/fact?id={porto.id}">' in new  # what it superseded
    assert f'href="/session?id={quote(SESSION)}&amp;at=1"' in new  # where it came from
    assert re.search(r'<tr class="target">\s*<td class="num">2</td>', new)  # its place
    single = any_db.facts.search("vegetarian", 1)[0]
    alone = client.get("/fact", params={"id": single.id}).text
    assert "Supersession chain" not in alone and "no chain" in alone


@pytest.mark.parametrize(("facts", "every", "pages"), [(250, 10, [25]), (120, 1, [50, 50, 20])])
def test_superseded_facts_at_a_moment_are_paged_by_the_store(
    sqlite_db, make_client, facts, every, pages
):
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    sqlite_db.facts.index_many(
        Fact(content=f"value {n:03d} one", key=f"k{n:03d}", valid_from=start) for n in range(facts)
    )
    sqlite_db.facts.index_many(
        Fact(content=f"value {n:03d} two", key=f"k{n:03d}", valid_from=start.replace(month=6))
        for n in range(0, facts, every)
    )
    client = make_client(sqlite_db)
    params = {"as_of": "2025-03-01", "state": "superseded"}
    found: list[str] = []
    sizes: list[int] = []
    offset = 0
    while True:
        page = client.get("/facts", params={**params, "offset": offset}).text
        shown = re.findall(r"value (\d{3}) one", page)
        assert "two" not in page and "looked at" not in page
        rows = re.search(r"rows (\d+)–(\d+)", page)
        if len(pages) > 1:  # the pager shows where the page is
            assert rows is not None and int(rows.group(1)) == offset + 1
        found += shown
        sizes.append(len(shown))
        following = re.search(r'offset=(\d+)[^"]*">Next', page)
        if following is None:
            break
        offset = int(following.group(1))
    assert sizes == pages
    assert sorted(found) == [f"{n:03d}" for n in range(0, facts, every)]  # each once


def test_expired_facts_are_shown_until_deleted(demo_db, make_client):
    client = make_client(demo_db)
    assert "tomorrow&#39;s weather" not in client.get("/facts").text  # the agent's view
    page = client.get("/facts", params={"state": "expired"}).text
    assert "Asked about tomorrow&#39;s weather." in page and "vegetarian" not in page
    assert "stored until <code>expire()</code> deletes them" in page
    assert '<tr class="expired">' in page and "expired</span>" in page
    link = re.search(r'href="(/fact\?id=[^"]+&amp;created=[^"]+)"', page)
    assert link is not None  # an expired fact links with its creation time
    own = client.get(link.group(1).replace("&amp;", "&"))
    assert own.status_code == 200 and "Asked about tomorrow&#39;s weather." in own.text
    assert '<span class="badge">expired</span></h1>' in own.text
    gone = demo_db.facts.list(state="expired")[0]
    assert client.get("/fact", params={"id": gone.id}).status_code == 404  # `get` skips it
    everything = client.get("/facts", params={"state": "all"}).text
    for text in ("tomorrow&#39;s weather", "lives in Porto.", "lives in Lisbon.", "vegetarian"):
        assert text in everything, text
    assert demo_db.facts.expire() == 1
    assert "weather" not in client.get("/facts", params={"state": "expired"}).text
    assert client.get(link.group(1).replace("&amp;", "&")).status_code == 404


def test_an_expired_fact_of_a_large_batch_opens_by_its_link(sqlite_db, make_client):
    moment = datetime.now(timezone.utc) - timedelta(days=2)
    sqlite_db.facts.index_many(
        Fact(content=f"batch {n:03d}", created_at=moment, expires_at=moment + timedelta(days=1))
        for n in range(450)
    )  # one creation time for all
    client = make_client(sqlite_db)
    for wanted in ("batch 000", "batch 449"):
        (fact,) = [
            f for f in sqlite_db.facts.list(state="expired", limit=500) if f.content == wanted
        ]
        own = client.get("/fact", params={"id": fact.id, "created": fact.created_at.isoformat()})
        assert own.status_code == 200 and wanted in own.text


def test_expired_facts_of_a_key_are_found_a_bounded_scan_at_a_time(sqlite_db, make_client):
    past = datetime.now(timezone.utc) - timedelta(hours=1)
    sqlite_db.facts.index_many(
        Fact(content=f"stale {n:03d}", key="k.rare" if n % 10 == 0 else "k.common",
             expires_at=past)
        for n in range(250)
    )  # fmt: skip
    client = make_client(sqlite_db)
    first = client.get("/facts", params={"key": "k.rare", "state": "expired"}).text
    assert "looked at rows 1–200: 20 shown" in first
    assert "expired facts of this key, newest first" in first
    following = re.search(r'offset=(\d+)[^"]*">Next', first)
    assert following is not None and following.group(1) == "200"
    rest = client.get("/facts", params={"key": "k.rare", "state": "expired", "offset": 200}).text
    assert "looked at rows 201–250: 5 shown" in rest and ">Next" not in rest
    shown = re.findall(r"stale (\d{3})", first + rest)
    assert sorted(shown) == [f"{n:03d}" for n in range(0, 250, 10)]


def test_filters_that_cannot_work_say_why(demo_db, make_client):
    client = make_client(demo_db)
    refused = client.get("/facts", params={"state": "deleted"})
    assert refused.status_code == 400 and "show must be one of superseded" in refused.text
    bad = client.get("/facts", params={"as_of": "yesterday"})
    assert bad.status_code == 400 and "2026-11-27 14:30" in bad.text
    superseded = client.get("/facts", params={"state": "superseded"}).text  # no key or time
    assert "The user lives in Porto." in superseded and "lives in Lisbon." not in superseded


def test_a_moment_with_a_zone_keeps_naming_the_same_moment(demo_db, make_client):
    from sqlmem.ui.fact_views import parse_moment

    assert parse_moment("2026-02-10T10:00+02:00") == datetime(2026, 2, 10, 8, tzinfo=timezone.utc)
    assert parse_moment("2026-02-10") == datetime(2026, 2, 10, tzinfo=timezone.utc)
    assert parse_moment("  ") is None
    page = make_client(demo_db).get("/facts", params={"as_of": "2026-02-28T23:30-01:00"}).text
    # 00:30 UTC on March 1st: Lisbon is already valid, Porto no longer
    assert "The user lives in Lisbon." in page and "The user lives in Porto." not in page
    assert "valid at 2026-03-01 00:30:00 UTC" in page
