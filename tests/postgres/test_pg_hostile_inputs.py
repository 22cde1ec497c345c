# mypy: disable-error-code="arg-type, list-item, misc"
"""The SQLite suite's hostile input, run against the PostgreSQL stores (issue 21).

The strategies and the wrong-type table are imported from
tests/reliability/test_hostile_input.py, so both backends face the same input: any plane,
NUL, lone surrogates, SQL and FTS5 syntax, huge values, CJK. Each call works (and what was
written reads back equal) or raises `InvalidArgumentError` naming the argument; never a
psycopg error, a TypeError or a pydantic ValidationError. Then agent isolation under
hypothesis through every read, and a server-side statement trace (`log_statement = all`)
showing no user text in any SQL text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import pgserver
import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pgserver import new_agent_id
from reliability.test_hostile_input import WRONG, _categories, _names, hostile, json_values

import sqlmem.postgres as sp
from sqlmem import Fact, FactNotFoundError, InvalidArgumentError, Message


@pytest.fixture(scope="module")
def shared(pg_backend: Any) -> Iterator[Any]:
    """One agent for the hypothesis runs, seeded as the SQLite suite's is."""
    db = pg_backend.open(new_agent_id())
    db.facts.index(Fact(id="seed", content="apple pie recipe", tags=["t"], metadata={"k": 1}))
    db.history.append("seed", Message(role="user", content="apple pie"))
    yield db
    db.close()


# -- the SQLite suite's hypothesis tests, on PostgreSQL -------------------------------------


@settings(max_examples=80)
@given(
    session=hostile,
    content=hostile,
    name=hostile,
    meta=st.dictionaries(hostile, json_values, max_size=3),
    n=st.integers(-(2**70), 2**70),
    query=hostile,
)
def test_history_hostile_strings(
    shared: Any, session: str, content: str, name: str, meta: dict[str, Any], n: int, query: str
) -> None:
    h = shared.history
    try:
        message = Message(role="user", content=content, name=name, metadata=meta)
    except InvalidArgumentError:
        message = Message(role="user", content="fallback")
    try:
        seq = h.append(session, message)
    except InvalidArgumentError as exc:
        _names(exc, "session_id", "message", "surrogate")
    else:
        back = h.get_all(session)[-1]
        assert back.seq == seq
        assert (back.content, back.name, back.metadata) == (
            message.content,
            message.name,
            message.metadata,
        )
    for call in (
        lambda: h.get_recent(session, n),
        lambda: h.count(session),
        lambda: h.get_summary(session),
        lambda: h.set_summary(session, content),
        lambda: h.compact(session, abs(n) % 5, summary=content),
        lambda: h.search(query, session_id=session, top_k=n),
        lambda: h.search(query, top_k=n),
        lambda: h.around(session, n, before=abs(n) % 3),
    ):
        try:
            call()
        except InvalidArgumentError as exc:
            _names(exc, "session_id", "text", "summary", "keep_last", "surrogate", "query", "seq")


@settings(max_examples=80)
@given(
    fact_id=hostile,
    content=hostile.map(lambda text: f"{text} w"),
    source=hostile,
    tags=st.lists(hostile, max_size=3),
    category=_categories,
    meta=st.dictionaries(hostile, json_values, max_size=3),
)
def test_fact_hostile_strings_round_trip(
    shared: Any,
    fact_id: str,
    content: str,
    source: str,
    tags: list[str],
    category: str,
    meta: dict[str, Any],
) -> None:
    try:
        fact = Fact(
            id=fact_id, content=content, source=source, tags=tags, category=category, metadata=meta
        )
    except InvalidArgumentError:
        return
    f = shared.facts
    try:
        stored = f.index(fact)
    except InvalidArgumentError as exc:
        _names(exc, "Fact", "id")
        return
    back = f.get(stored)
    assert back is not None
    assert (back.content, back.source, back.tags, back.category, back.metadata) == (
        fact.content,
        fact.source,
        fact.tags,
        fact.category,
        fact.metadata,
    )
    if meta:
        key, value = next(iter(meta.items()))
        assert stored in {x.id for x in f.search_by_metadata(key, value)}
    assert stored in {x.id for x in f.search(content, top_k=50, tags=tags or None)} or not (
        shared.facts._compiler.terms(content)
    )
    f.delete(stored)
    assert f.get(stored) is None
    with pytest.raises(FactNotFoundError):
        f.delete(stored)


@settings(max_examples=120)
@given(
    query=hostile,
    mode=st.sampled_from(["any", "all", "raw"]),
    top_k=st.integers(-5, 2**70),
    tags=st.none() | st.lists(hostile, max_size=2),
    category=st.none() | hostile,
    source=st.none() | hostile,
    meta=st.none() | st.dictionaries(hostile, json_values, max_size=2),
    since=st.none() | st.datetimes(timezones=st.none() | st.just(timezone.utc)),
)
def test_fact_search_hostile_queries_and_filters(
    shared: Any,
    query: str,
    mode: str,
    top_k: int,
    tags: list[str] | None,
    category: str | None,
    source: str | None,
    meta: dict[str, Any] | None,
    since: datetime | None,
) -> None:
    try:
        shared.facts.search(
            query,
            top_k,
            mode=mode,
            tags=tags,
            category=category,
            source=source,
            metadata=meta,
            since=since,
            until=since,
        )
    except InvalidArgumentError as exc:  # raw: FTS5 syntax is the SQLite store's own
        _names(exc, "tags", "category", "source", "metadata", "surrogate", "mode='raw'", "query")
    try:
        shared.facts.list(tags=tags, category=category, source=source, since=since, limit=top_k)
    except InvalidArgumentError as exc:
        _names(exc, "tags", "category", "source", "surrogate", "limit")


_STORE_CALLS = ("append", "get_recent", "compact", "set_summary", "history", "purge", "index",
                "get ", "delete", "search", "list", "inject_memory")  # fmt: skip
PG_WRONG = sorted(case for case in WRONG if case.startswith(_STORE_CALLS))


@pytest.mark.parametrize("case", PG_WRONG)
def test_wrong_types_are_invalid_argument_errors(open_pg: Callable[..., Any], case: str) -> None:
    db = open_pg()
    call, words = WRONG[case]
    with pytest.raises(InvalidArgumentError) as caught:
        call(db)
    _names(caught.value, *words)
    assert (db.history.count("s"), db.facts.count()) == (0, 0)  # nothing was stored


def test_the_wrong_type_table_is_mostly_store_calls() -> None:
    assert len(PG_WRONG) >= 45  # a guard: a renamed case must not silently drop out


# -- huge values, CJK -----------------------------------------------------------------------


def test_ten_megabyte_values_round_trip(open_pg: Callable[..., Any]) -> None:
    db = open_pg()
    words = " ".join(f"w{i}" for i in range(1_500_000))  # ~10.5 MB, 1.5 M distinct words
    seq = db.history.append("big", Message(role="user", content=words, metadata={"k": words}))
    back = db.history.get_recent("big", 1)[0]
    assert back.seq == seq and back.content == words and back.metadata == {"k": words}
    db.facts.index(Fact(id="big", content=words, tags=["t" * 100_000]))
    fact = db.facts.get("big")
    assert fact is not None and fact.content == words and fact.tags == ["t" * 100_000]
    assert [f.id for f in db.facts.search("w12345", tags=["t" * 100_000])] == ["big"]
    assert [m.seq for m in db.history.search("w1234", session_id="big")] == [seq]
    # Past the tsvector's megabyte (sqlmem/postgres/ranking.py): stored, not indexed.
    assert db.facts.search("w1499999") == []


def test_cjk_emoji_and_diacritics(open_pg: Callable[..., Any]) -> None:
    db = open_pg()
    texts = ["用户喜欢周日早上跑步", "我喜欢Python编程", "emoji 😀 and naïve café", "東京タワー"]
    db.facts.index_many([Fact(id=f"f{i}", content=t) for i, t in enumerate(texts)])
    db.history.append_many("s", [Message(role="user", content=t) for t in texts])
    for query, want in (("跑步", "f0"), ("python", "f1"), ("cafe", "f2"), ("タワー", "f3"),
                        ("喜欢 编程", "f1")):  # fmt: skip
        assert [f.id for f in db.facts.search(query, mode="all")] == [want], query
        assert want in [f.id for f in db.facts.search(query)], query
        assert [m.content for m in db.history.search(query)][:1] == [texts[int(want[1])]]


# -- agent isolation, through every read ----------------------------------------------------


def _reads(db: Any, session: str, fact_id: str, query: str, key: str, value: Any) -> list[Any]:
    """What every read of `db` returns about these names (each read listed once)."""
    h, f = db.history, db.facts
    return [
        h.sessions(),
        h.count(session),
        h.get_all(session),
        h.get_recent(session, 10),
        h.get_recent(session, 10, pair_safe=False),
        h.get_summary(session),
        h.around(session, 1, before=1, after=5),
        h.search(query),
        h.search(query, session_id=session),
        f.get(fact_id),
        f.count(),
        f.list(limit=100),
        f.list(tags=[key]),
        f.search(query, mode="any"),
        f.search(query, mode="all"),
        f.search(query, metadata={key: value}),
        f.search_by_metadata(key, value),
        f.list(metadata={key: {"$exists": True}}),
        f.tags(),
        f.categories(),
        f.promote_eligible(min_hits=0),
    ]


_names_st = hostile.filter(lambda s: s != "" and not any(0xD800 <= ord(c) <= 0xDFFF for c in s))


@settings(max_examples=30)
@given(session=_names_st, fact_id=_names_st, content=_names_st, key=_names_st, query=hostile)
def test_one_agent_never_reads_another_agents_rows(
    open_pg: Callable[..., Any], session: str, fact_id: str, content: str, key: str, query: str
) -> None:
    a, b = open_pg(), open_pg()
    value = content
    try:
        a.history.append(session, Message(role="user", content=content))
        a.history.set_summary(session, content)
        a.facts.index(Fact(id=fact_id, content=f"{content} x", tags=[key], category="c/d",
                           metadata={key: value}))  # fmt: skip
    except InvalidArgumentError:
        return  # refused for a's own reasons (tested above)
    empty = _reads(b, session, fact_id, f"{query} {content} x", key, value)
    assert all(not got for got in empty), empty  # b sees none of a's rows
    b.history.append(session, Message(role="user", content="b's own"))
    b.facts.index(Fact(id=fact_id, content="b's own", tags=[key], metadata={key: value}))
    a_view = _reads(a, session, fact_id, f"{content} x", key, value)
    assert a.history.get_all(session)[0].content == content
    assert a.history.count(session) == 1 and a.facts.count() == 1
    got = a.facts.get(fact_id)
    assert got is not None and got.content == f"{content} x"
    assert all("b's own" not in repr(part) for part in a_view)  # a sees none of b's


# -- SQL always bound, seen by the server ---------------------------------------------------

MARK = "qz7mark"


@pytest.fixture(scope="module")
def traced_server() -> Iterator[pgserver.PgServer]:
    """A server of this module's own that logs every statement it is sent."""
    server = pgserver.start()
    sp.open(server.dsn, new_agent_id()).close()  # the schema, before the trace
    with psycopg.connect(server.dsn, autocommit=True) as admin:
        admin.execute("ALTER SYSTEM SET log_statement = 'all'")
        admin.execute("SELECT pg_reload_conf()")
    yield server
    server.stop()


def _statements(log: str) -> list[str]:
    """The statement texts of a server log (entries start with a timestamp; the bound
    values are in separate "DETAIL:  parameters:" entries, left out)."""
    entries = re.split(r"\n(?=\d{4}-\d\d-\d\d )", log)
    return [e for e in entries if re.search(r"LOG:  (statement|execute [^:]*):", e)]


def test_server_trace_under_hostile_input_shows_no_user_text(
    traced_server: pgserver.PgServer,
) -> None:
    hostile_values = [
        f"'); DROP TABLE facts; -- {MARK}",
        f"{MARK}' OR '1'='1",
        f"{MARK} \x00 $1",
        f"{MARK}:* & | ! <-> '\\'",
        f"{MARK} 跑步 😀",
        f'"{MARK}" NEAR(a b)',
    ]
    start = traced_server.log.stat().st_size
    with sp.open(traced_server.dsn, new_agent_id()) as db:
        for i, value in enumerate(hostile_values):
            session = f"s{i} {value}"
            db.history.append(session, Message(role="user", content=value, metadata={value: i}))
            db.history.set_summary(session, value)
            db.facts.index(Fact(id=value, content=value, tags=[value], source=value,
                                metadata={value: value}))  # fmt: skip
            assert db.history.search(value, session_id=session)[0].content == value
            assert db.facts.search(value, mode="all", tags=[value])[0].id == value
            assert [f.id for f in db.facts.search_by_metadata(value, value)] == [value]
            assert db.facts.list(metadata={value: {"$in": [value]}})[0].id == value
            db.history.around(session, 1)
            db.history.compact(session, 0, value)
        db.facts.delete_many(hostile_values)
    with traced_server.log.open(errors="replace") as log:
        log.seek(start)
        text = log.read()
    statements = _statements(text)
    assert len(statements) > 50, "the server logged no statements"
    assert MARK in text  # the values did reach the server: as parameters
    assert not [s for s in statements if MARK in s]
