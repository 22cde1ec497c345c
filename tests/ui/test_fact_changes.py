"""Facts that change, in the inspector: valid time, the supersession chain of a key, the
facts of an earlier moment, the superseded-only filter and where each fact came from."""

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
    only = client.get("/facts", params={"as_of": before_move, "superseded": "1"}).text
    assert "The user lives in Porto." in only and "looked at rows 1–" in only
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


@pytest.mark.parametrize(
    ("facts", "every", "looked"),
    [
        (250, 10, [(1, 200), (201, 250)]),  # rare: 200 looked at, 20 found, then the rest
        (120, 1, [(1, 50), (51, 100), (101, 120)]),  # all superseded: a page of 50 each
    ],
)
def test_superseded_facts_are_found_a_bounded_scan_at_a_time(
    sqlite_db, make_client, facts, every, looked
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
    params = {"as_of": "2025-03-01", "superseded": "1"}
    found: list[str] = []
    spans: list[tuple[int, int]] = []
    offset = 0
    while True:
        page = client.get("/facts", params={**params, "offset": offset}).text
        shown = re.findall(r"value (\d{3}) one", page)
        assert "two" not in page and len(shown) <= 50
        found += shown
        span = re.search(r"looked at rows (\d+)–(\d+): (\d+) shown", page)
        assert span is not None and int(span.group(3)) == len(shown)
        spans.append((int(span.group(1)), int(span.group(2))))
        assert ("⇤ First" in page) == (offset > 0)
        following = re.search(r'offset=(\d+)[^"]*">Next', page)
        if following is None:
            break
        offset = int(following.group(1))
    assert spans == looked
    assert sorted(found) == [f"{n:03d}" for n in range(0, facts, every)]  # each once


def test_filters_that_cannot_work_say_why(demo_db, make_client):
    client = make_client(demo_db)
    refused = client.get("/facts", params={"superseded": "1"})
    assert refused.status_code == 400 and "key or a &#39;valid at&#39; time" in refused.text
    bad = client.get("/facts", params={"as_of": "yesterday"})
    assert bad.status_code == 400 and "2026-11-27 14:30" in bad.text


def test_a_moment_with_a_zone_keeps_naming_the_same_moment(demo_db, make_client):
    from sqlmem.ui.fact_views import parse_moment

    assert parse_moment("2026-02-10T10:00+02:00") == datetime(2026, 2, 10, 8, tzinfo=timezone.utc)
    assert parse_moment("2026-02-10") == datetime(2026, 2, 10, tzinfo=timezone.utc)
    assert parse_moment("  ") is None
    page = make_client(demo_db).get("/facts", params={"as_of": "2026-02-28T23:30-01:00"}).text
    # 00:30 UTC on March 1st: Lisbon is already valid, Porto no longer
    assert "The user lives in Lisbon." in page and "The user lives in Porto." not in page
    assert "valid at 2026-03-01 00:30:00 UTC" in page
