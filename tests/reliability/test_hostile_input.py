# mypy: disable-error-code="arg-type, list-item, misc"
"""Hostile input on every public entry point: it works, or it is an InvalidArgumentError.

Arbitrary strings (any plane, NUL, lone surrogates, SQL and FTS5 syntax) as session ids,
agent ids, tags, categories, metadata keys and values, fact ids, queries in every mode and
sources; huge values; wrong types. Each call either works (and what was written reads
back equal) or raises `InvalidArgumentError` (or a documented subclass / sibling such as
`InvalidQueryError`, `InvalidAgentIdError`, `FactNotFoundError`) whose message names the
argument. Never TypeError, AttributeError, an apsw error or a pydantic ValidationError.

Building a `Message` or `Fact` with bad fields raises InvalidArgumentError too (the
records' own contract, SPEC 4). But records are mutable, so the stores must re-check what
they are handed; the wrong-type table below mutates valid records to get bad values past
construction.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem import (
    Fact,
    FactNotFoundError,
    InvalidAgentIdError,
    InvalidArgumentError,
    InvalidQueryError,
    Message,
)
from sqlmem.context import LLMExtractor, inject_memory

# -- strategies ----------------------------------------------------------------------------

_NASTY = [
    "",
    " ",
    "'; DROP TABLE facts; --",
    '"',
    "NEAR(a b)",
    "a:b",
    "*",
    "C++",
    "AND",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "🙂",
    "用户喜欢跑步",
    "../etc/passwd",
    "con",
    ".hidden",
    "a/b",
    "-",
    "\n",
    "a" * 513,
]

#: Any code point, lone surrogates included.
_any_char = st.characters(codec=None, exclude_categories=())
hostile = st.one_of(st.sampled_from(_NASTY), st.text(_any_char, max_size=30))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | hostile,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile, inner, max_size=3),
    max_leaves=8,
)


def _names(exc: BaseException, *words: str) -> None:
    assert any(w in str(exc) for w in words), f"{type(exc).__name__}({exc}) names none of {words}"


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlmem.MemoryDB]:
    """One database for the hypothesis runs (per-example files would cost seconds)."""
    db = sqlmem.open(tmp_path_factory.mktemp("hostile") / "memory.db")
    db.facts.index(Fact(id="seed", content="apple pie recipe", tags=["t"], metadata={"k": 1}))
    db.history.append("seed", Message(role="user", content="apple pie"))
    yield db
    db.close()


# -- hypothesis: history -------------------------------------------------------------------


@settings(max_examples=150)
@given(
    session=hostile,
    content=hostile,
    name=hostile,
    meta=st.dictionaries(hostile, json_values, max_size=3),
    n=st.integers(-(2**70), 2**70),
    query=hostile,
)
def test_history_hostile_strings(
    shared: sqlmem.MemoryDB,
    session: str,
    content: str,
    name: str,
    meta: dict[str, Any],
    n: int,
    query: str,
) -> None:
    h = shared.history
    try:
        message = Message(role="user", content=content, name=name, metadata=meta)
    except InvalidArgumentError:
        message = Message(role="user", content="fallback")  # records refuse it themselves
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
    ):
        try:
            call()
        except InvalidArgumentError as exc:
            _names(exc, "session_id", "text", "summary", "keep_last", "surrogate", "query")


# -- hypothesis: facts ---------------------------------------------------------------------


_categories = st.one_of(
    hostile, st.from_regex(r"[A-Za-z0-9_-]{1,8}(/[A-Za-z0-9_-]{1,8}){0,2}", fullmatch=True)
)


@settings(max_examples=150)
@given(
    fact_id=hostile,
    content=hostile.map(lambda text: f"{text} w"),  # non-blank, so most examples build
    source=hostile,
    tags=st.lists(hostile, max_size=3),
    category=_categories,
    meta=st.dictionaries(hostile, json_values, max_size=3),
)
def test_fact_hostile_strings_round_trip(
    shared: sqlmem.MemoryDB,
    fact_id: str,
    content: str,
    source: str,
    tags: list[str],
    category: str,
    meta: dict[str, Any],
) -> None:
    try:
        fact = Fact(
            id=fact_id,
            content=content,
            source=source,
            tags=tags,
            category=category,
            metadata=meta,
        )
    except InvalidArgumentError:
        return  # the record refuses it itself (lone surrogate, bad category)
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
    assert (
        stored in {x.id for x in f.search_by_metadata(*next(iter(meta.items())))} if meta else True
    )
    f.delete(stored)
    assert f.get(stored) is None
    with pytest.raises(FactNotFoundError):
        f.delete(stored)


@settings(max_examples=200)
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
    shared: sqlmem.MemoryDB,
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
    except InvalidQueryError as exc:
        assert mode == "raw", exc
        assert isinstance(exc.__cause__, apsw.Error)
    except InvalidArgumentError as exc:
        _names(exc, "tags", "category", "source", "metadata", "surrogate")
    try:
        shared.facts.list(tags=tags, category=category, source=source, since=since, limit=top_k)
    except InvalidArgumentError as exc:
        _names(exc, "tags", "category", "source", "surrogate")


def test_naive_and_aware_bounds_agree(shared: sqlmem.MemoryDB) -> None:
    """A naive since/until is UTC: it selects exactly what the aware UTC one selects."""
    f = shared.facts
    now = datetime.now(timezone.utc)
    f.index(Fact(id="dated", content="dated apple", created_at=now - timedelta(days=1)))
    for bound in (now - timedelta(days=2), now - timedelta(hours=1), now):
        naive = bound.replace(tzinfo=None)
        plus5 = bound.astimezone(timezone(timedelta(hours=5)))
        for kw in ("since", "until"):
            want = [x.id for x in f.search("apple", 50, **{kw: bound})]
            assert [x.id for x in f.search("apple", 50, **{kw: naive})] == want
            assert [x.id for x in f.search("apple", 50, **{kw: plus5})] == want


# -- hypothesis: agent ids -----------------------------------------------------------------


@settings(max_examples=150)
@given(
    agent_id=st.one_of(hostile, st.from_regex(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,20}", fullmatch=True))
)
def test_agent_ids_never_escape_the_data_dir(tmp_path: Path, agent_id: str) -> None:
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    data_dir = root / "data"
    before = set(os.listdir(root))
    factory = sqlmem.MemoryFactory(data_dir, default=sqlmem.AgentMemoryConfig())
    try:
        try:
            history = factory.resolve_history(agent_id)
        except InvalidAgentIdError as exc:
            _names(exc, "agent_id")
            assert set(os.listdir(root)) == before
            return
        assert history is not None
        expected = data_dir / "agents" / agent_id / "memory.db"
        assert expected.is_file()
        assert expected.resolve().parent.parent == (data_dir / "agents").resolve()
    finally:
        factory.close()


# -- wrong types ---------------------------------------------------------------------------


def _message(**changes: Any) -> Message:
    message = Message(role="user", content="ok")
    for key, value in changes.items():
        setattr(message, key, value)  # records are mutable: bad values get past pydantic
    return message


def _fact(**changes: Any) -> Fact:
    fact = Fact(content="ok")
    for key, value in changes.items():
        setattr(fact, key, value)
    return fact


_AWARE = datetime(2024, 1, 1, tzinfo=timezone.utc)

#: id -> (call on a MemoryDB, words one of which the message must contain)
WRONG: dict[str, tuple[Callable[[sqlmem.MemoryDB], Any], tuple[str, ...]]] = {
    # history
    "append session None": (lambda db: db.history.append(None, _message()), ("session_id",)),
    "append session int": (lambda db: db.history.append(5, _message()), ("session_id",)),
    "append message str": (lambda db: db.history.append("s", "hi"), ("message",)),
    "append message dict": (lambda db: db.history.append("s", {"role": "user"}), ("message",)),
    "append content int": (lambda db: db.history.append("s", _message(content=5)), ("content",)),
    "append content bytes": (
        lambda db: db.history.append("s", _message(content=b"x")),
        ("content",),
    ),
    "append name None": (lambda db: db.history.append("s", _message(name=None)), ("name",)),
    "append tool_call_id int": (
        lambda db: db.history.append("s", _message(tool_call_id=1)),
        ("tool_call_id",),
    ),
    "append tool_calls [1]": (
        lambda db: db.history.append("s", _message(tool_calls=[1])),
        ("tool_calls",),
    ),
    "append is_error str": (
        lambda db: db.history.append("s", _message(is_error="yes")),
        ("is_error",),
    ),
    "append metadata list": (
        lambda db: db.history.append("s", _message(metadata=[1])),
        ("metadata",),
    ),
    "append metadata int key": (
        lambda db: db.history.append("s", _message(metadata={1: 2})),
        ("metadata",),
    ),
    "append metadata nan": (
        lambda db: db.history.append("s", _message(metadata={"x": math.nan})),
        ("metadata",),
    ),
    "append created_at str": (
        lambda db: db.history.append("s", _message(created_at="2024")),
        ("created_at",),
    ),
    "append_many None": (lambda db: db.history.append_many("s", None), ("messages",)),
    "append_many [None]": (lambda db: db.history.append_many("s", [None]), ("messages",)),
    "get_recent bool": (lambda db: db.history.get_recent("s", True), ("n",)),
    "get_recent float": (lambda db: db.history.get_recent("s", 1.5), ("n",)),
    "compact None": (lambda db: db.history.compact("s", None), ("keep_last",)),
    "compact summary int": (lambda db: db.history.compact("s", 1, summary=5), ("summary",)),
    "set_summary None": (lambda db: db.history.set_summary("s", None), ("text",)),
    "history search None": (lambda db: db.history.search(None), ("query",)),
    "history search top_k bool": (lambda db: db.history.search("a", top_k=True), ("top_k",)),
    "purge bytes": (lambda db: db.history.purge(b"s"), ("session_id",)),
    # facts
    "index None": (lambda db: db.facts.index(None), ("Fact",)),
    "index dict": (lambda db: db.facts.index({"content": "x"}), ("Fact",)),
    "index content int": (lambda db: db.facts.index(_fact(content=5)), ("content",)),
    "index tags str": (lambda db: db.facts.index(_fact(tags="abc")), ("tags",)),
    "index metadata nan": (
        lambda db: db.facts.index(_fact(metadata={"x": math.nan})),
        ("metadata",),
    ),
    "index metadata int key": (lambda db: db.facts.index(_fact(metadata={1: 2})), ("metadata",)),
    "index created_at str": (lambda db: db.facts.index(_fact(created_at="2024")), ("created_at",)),
    "index_many str": (lambda db: db.facts.index_many("abc"), ("Fact",)),
    "get None": (lambda db: db.facts.get(None), ("id",)),
    "delete int": (lambda db: db.facts.delete(5), ("id",)),
    "delete_many [1]": (lambda db: db.facts.delete_many([1]), ("id",)),
    "search None": (lambda db: db.facts.search(None), ("query",)),
    "search top_k str": (lambda db: db.facts.search("a", "3"), ("top_k",)),
    "search top_k bool": (lambda db: db.facts.search("a", True), ("top_k",)),
    "search mode None": (lambda db: db.facts.search("a", mode=None), ("mode",)),
    "search tags str": (lambda db: db.facts.search("a", tags="t"), ("tags",)),
    "search tags [None]": (lambda db: db.facts.search("a", tags=[None]), ("tags",)),
    "search category int": (lambda db: db.facts.search("a", category=5), ("category",)),
    "search category ..": (lambda db: db.facts.search("a", category="../x"), ("category",)),
    "search source int": (lambda db: db.facts.search("a", source=5), ("source",)),
    "search since str": (lambda db: db.facts.search("a", since="2024"), ("since",)),
    "search until date": (
        lambda db: db.facts.search("a", until=_AWARE.date()),
        ("until",),
    ),
    "search metadata nan": (
        lambda db: db.facts.search("a", metadata={"k": math.nan}),
        ("metadata",),
    ),
    "search metadata str": (lambda db: db.facts.search("a", metadata="k"), ("metadata",)),
    "search_by_metadata key None": (
        lambda db: db.facts.search_by_metadata(None, 1),
        ("key",),
    ),
    "list limit bool": (lambda db: db.facts.list(limit=True), ("limit",)),
    "list offset -1": (lambda db: db.facts.list(offset=-1), ("offset",)),
    # engine, factory, helpers
    "open None": (lambda db: sqlmem.open(None), ("path",)),
    "open int": (lambda db: sqlmem.open(5), ("path",)),
    "open config dict": (lambda db: sqlmem.open(db.path, {"wal": True}), ("config",)),
    "backup None": (lambda db: db.backup(None), ("path",)),
    "open_history_store None": (lambda db: sqlmem.open_history_store(None), ("path",)),
    "StoreConfig huge busy timeout": (
        lambda db: sqlmem.StoreConfig(busy_timeout_ms=2**70),
        ("busy_timeout_ms",),
    ),
    "factory resolve None": (
        lambda db: sqlmem.MemoryFactory(None).resolve(None),
        ("agent_id",),
    ),
    "inject_memory query None": (
        lambda db: inject_memory(db.facts, None),
        ("query",),
    ),
    "inject_memory max_facts str": (
        lambda db: inject_memory(db.facts, "a", max_facts="3"),
        ("max_facts",),
    ),
    "extract session None": (
        lambda db: LLMExtractor(lambda p: "x").extract(None, [_message()]),
        ("session_id",),
    ),
    "extract messages None": (
        lambda db: LLMExtractor(lambda p: "x").extract("s", None),
        ("messages",),
    ),
}


@pytest.mark.parametrize("case", sorted(WRONG))
def test_wrong_types_are_invalid_argument_errors(db: sqlmem.MemoryDB, case: str) -> None:
    call, words = WRONG[case]
    before = db.history.count("s"), db.facts.count()
    with pytest.raises(InvalidArgumentError) as caught:
        call(db)
    _names(caught.value, *words)
    assert (db.history.count("s"), db.facts.count()) == before  # nothing was stored


def test_extractor_refuses_a_hostile_session_without_pydantic_errors(db: sqlmem.MemoryDB) -> None:
    extractor = LLMExtractor(lambda prompt: "The user likes tea\n- \ud800broken\n")
    with pytest.raises(InvalidArgumentError, match="session_id"):
        extractor.extract("bad \udfff", [_message(content="hi")], db.facts)
    facts = extractor.extract("s", [_message(content="hi")], db.facts)
    assert [f.content for f in facts] == ["The user likes tea", "broken"]


# -- huge values ---------------------------------------------------------------------------


def test_ten_megabyte_values_round_trip(db: sqlmem.MemoryDB) -> None:
    words = " ".join(f"w{i}" for i in range(1_500_000))  # ~10.5 MB, 1.5 M distinct words
    assert len(words) > 10_000_000
    seq = db.history.append("big", Message(role="user", content=words, metadata={"k": words}))
    back = db.history.get_recent("big", 1)[0]
    assert back.seq == seq and back.content == words and back.metadata == {"k": words}
    db.facts.index(Fact(id="big", content=words, tags=["t" * 100_000]))
    fact = db.facts.get("big")
    assert fact is not None and fact.content == words
    assert [f.id for f in db.facts.search("w1499999")] == ["big"]
    assert [m.seq for m in db.history.search("w1234567", session_id="big")] == [seq]


def test_values_over_sqlite_length_limit_are_invalid_arguments(db: sqlmem.MemoryDB) -> None:
    """SQLITE_TOOBIG (limit lowered here; 1e9 bytes by default) is the caller's value."""
    with db._engine.write() as conn:
        conn.limit(apsw.SQLITE_LIMIT_LENGTH, 100_000)
    with pytest.raises(InvalidArgumentError) as caught:
        db.history.append("s", Message(role="user", content="x" * 200_000))
    assert isinstance(caught.value.__cause__, apsw.TooBigError)
    with pytest.raises(InvalidArgumentError):
        db.facts.index(Fact(content="y" * 200_000))
    assert db.history.count("s") == 0 and db.facts.count() == 0
    db.history.append("s", Message(role="user", content="small"))  # the writer still works
