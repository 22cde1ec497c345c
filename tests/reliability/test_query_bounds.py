"""The work one query can cause is bounded (issue 23 item 6).

Search time grew superlinearly with the number of distinct query words: FTS5 scores each
matching row over every phrase, so 10,000 words took seconds and a 1 MB raw query
minutes, holding a read snapshot all along. Now at most `MAX_QUERY_TERMS` phrases reach
FTS5 (the rarest of the query's words, both stores alike), a raw query of more words is
refused, and at most `MAX_QUERY_WORDS_READ` distinct words are read from a query's text.

Measured as work, not time: an exec tracer on every connection records the MATCH text
SQLite is handed, and the tests count its phrases.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

import sqlmem
from sqlmem import Fact, InvalidQueryError, Message
from sqlmem.inmemory.facts import InMemoryFactStore
from sqlmem.inmemory.history import InMemoryHistoryStore
from sqlmem.search.query import MAX_QUERY_TERMS, MAX_QUERY_WORDS_READ, compiler_for

_PHRASE = re.compile(r'"([^"]*)"')

#: 30 facts hold the common words (word j in 5 + j % 30 of them), one the rare word.
_COMMON = [f"often{j}" for j in range(100)]


def _facts() -> list[Fact]:
    facts = [
        Fact(id=f"c{i}", content=" ".join(w for j, w in enumerate(_COMMON) if i < 5 + j % 30))
        for i in range(30)
    ]
    facts.append(Fact(id="rare", content="the zebrafish note"))
    return facts


def _long_query(junk: int, common: int = 100, rare_at_end: bool = True) -> str:
    """`junk` words no fact holds, `common` words many facts hold, and the rare word."""
    words = [f"nowhere{i}" for i in range(junk)] + _COMMON[:common]
    return " ".join([*words, "zebrafish"] if rare_at_end else ["zebrafish", *words])


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[sqlmem.MemoryDB, list[tuple[str, Any]]]]:
    """A database whose connections record every statement and its bindings."""
    seen: list[tuple[str, Any]] = []

    def tracer(cursor: apsw.Cursor, sql: str, bindings: Any) -> bool:
        seen.append((sql, bindings))
        return True

    def hook(conn: apsw.Connection) -> None:
        conn.exec_trace = tracer

    apsw.connection_hooks.append(hook)
    try:
        db = sqlmem.open(tmp_path / "memory.db")
        try:
            db.facts.index_many(_facts())
            db.history.append_many(
                "s1", [Message(role="user", content=f.content) for f in _facts()]
            )
            db.history.append("s2", Message(role="user", content="zebrafish elsewhere"))
            yield db, seen
        finally:
            db.close()
    finally:
        apsw.connection_hooks.remove(hook)


def _matched_phrases(seen: list[tuple[str, Any]]) -> list[list[str]]:
    """The phrases of every MATCH text bound since `seen` was cleared."""
    out = []
    for sql, bindings in seen:
        if "MATCH" not in sql or bindings is None:
            continue
        values = bindings.values() if isinstance(bindings, dict) else bindings
        out += [_PHRASE.findall(v) for v in values if isinstance(v, str) and '"' in v]
    return out


def test_long_queries_send_at_most_max_terms_to_fts5(
    traced: tuple[sqlmem.MemoryDB, list[tuple[str, Any]]],
) -> None:
    """issue 23 item 6: a 10,000-word query sent 10,000 phrases to FTS5; now at most
    MAX_QUERY_TERMS, the rarest (the rare word always among them), in every search path."""
    db, seen = traced
    query = _long_query(junk=9_900, rare_at_end=False)  # 10,001 distinct words
    calls = {
        "facts any": lambda: db.facts.search(query, top_k=100),
        "facts all": lambda: db.facts.search(query, mode="all"),
        "facts filtered": lambda: db.facts.search(query, top_k=100, source=""),
        "history": lambda: db.history.search(query, top_k=100),
        "history session": lambda: db.history.search(query, session_id="s1", top_k=100),
    }
    for name, call in calls.items():
        seen.clear()
        found = call()
        matched = _matched_phrases(seen)
        if name == "facts all":  # a word in no fact: nothing can match, no MATCH runs
            assert found == [] and matched == []
            continue
        assert matched, name  # the tracer sees the search (else this passes vacuously)
        for phrases in matched:
            assert 0 < len(phrases) <= MAX_QUERY_TERMS, (name, len(phrases))
            assert "zebrafish" in phrases, name
            assert not any(p.startswith("nowhere") for p in phrases), name  # in no row
        assert "the zebrafish note" in [hit.content for hit in found], name


def test_the_rarest_words_are_kept(
    traced: tuple[sqlmem.MemoryDB, list[tuple[str, Any]]],
) -> None:
    """Of 100 present words, the 64 held by the fewest facts go to FTS5 (ties: the
    earlier word); what "all" then means: every returned fact holds each kept word."""
    db, seen = traced
    facts = _facts()
    df = {w: sum(w in f.content.split() for f in facts) for w in _COMMON}
    rarest = sorted(sorted(_COMMON, key=df.__getitem__)[: MAX_QUERY_TERMS - 1])
    assert len(set(df.values())) > 1  # the corpus does tell words apart
    seen.clear()
    found = db.facts.search(_long_query(junk=0), top_k=100, mode="all")
    (phrases,) = _matched_phrases(seen)
    assert sorted(phrases) == sorted([*rarest, "zebrafish"])
    assert found == []  # no fact holds "zebrafish" and the common words
    seen.clear()
    found = db.facts.search(" ".join(_COMMON), top_k=100, mode="all")
    kept = sorted(sorted(_COMMON, key=df.__getitem__)[:MAX_QUERY_TERMS])
    (phrases,) = _matched_phrases(seen)
    assert sorted(phrases) == kept
    assert {f.id for f in found} == {f.id for f in facts if set(kept) <= set(f.content.split())}


@pytest.mark.parametrize("rare_at_end", [True, False])
def test_both_fact_stores_cap_alike(tmp_path: Path, rare_at_end: bool) -> None:
    """The twin keeps the same terms: the same facts in the same order with the same
    scores, for "any" and "all", whatever the rare word's place in the query."""
    twin = InMemoryFactStore()
    twin.index_many(_facts())
    query = _long_query(junk=3_000, rare_at_end=rare_at_end)
    with sqlmem.open(tmp_path / "memory.db") as db:
        db.facts.index_many(_facts())
        for mode in ("any", "all"):
            got = db.facts.search(query, top_k=50, mode=mode)
            want = twin.search(query, top_k=50, mode=mode)
            assert [f.id for f in got] == [f.id for f in want], mode
            assert [f.score for f in got] == pytest.approx([f.score for f in want]), mode
        assert "rare" in [f.id for f in db.facts.search(query, top_k=50)]
        only_junk = " ".join(f"nowhere{i}" for i in range(500))
        assert db.facts.search(only_junk) == twin.search(only_junk) == []


def test_both_history_stores_cap_alike(tmp_path: Path) -> None:
    twin = InMemoryHistoryStore()
    with sqlmem.open(tmp_path / "memory.db") as db:
        for store in (db.history, twin):
            store.append_many("s1", [Message(role="user", content=f.content) for f in _facts()])
            store.append("s2", Message(role="user", content="zebrafish elsewhere"))
        query = _long_query(junk=3_000)
        for session in (None, "s1", "s2"):
            got = db.history.search(query, session_id=session, top_k=50)
            want = twin.search(query, session_id=session, top_k=50)
            assert [(m.session_id, m.seq) for m in got] == [(m.session_id, m.seq) for m in want], (
                session
            )
            assert [m.score for m in got] == pytest.approx([m.score for m in want])
            assert any("zebrafish" in m.content for m in got), session


def test_raw_queries_of_too_many_words_are_refused(
    traced: tuple[sqlmem.MemoryDB, list[tuple[str, Any]]],
) -> None:
    """A raw query cannot be trimmed safely: more than MAX_QUERY_TERMS words is an
    InvalidQueryError naming the limit, before FTS5 sees it (a 1 MB one took minutes)."""
    db, seen = traced
    words = [f"often{i}" for i in range(MAX_QUERY_TERMS)]
    assert db.facts.search(" OR ".join(words), mode="raw", top_k=100)  # operators are free
    assert db.facts.search("NEAR(often1 often5, 3) NOT often7", mode="raw") is not None
    for text in (
        " OR ".join([*words, "zebrafish"]),
        " ".join(["often1"] * (MAX_QUERY_TERMS + 1)),  # repeats count: each is a phrase
        ("zebrafish OR " * 100_000)[:1_000_000],
    ):
        seen.clear()
        with pytest.raises(InvalidQueryError, match="MAX_QUERY_TERMS") as info:
            db.facts.search(text, mode="raw")
        assert str(MAX_QUERY_TERMS) in str(info.value)
        assert not [sql for sql, _ in seen if "MATCH" in sql]  # refused before any SQL


def test_query_text_is_read_up_to_max_words(
    traced: tuple[sqlmem.MemoryDB, list[tuple[str, Any]]],
) -> None:
    """At most MAX_QUERY_WORDS_READ distinct words are read, so even the vocabulary
    lookup that picks the rarest is bounded; a word past them is not searched."""
    db, seen = traced
    compiler = compiler_for(db.config.tokenizer)
    within = _long_query(junk=MAX_QUERY_WORDS_READ - 101)  # the rare word is the last read
    beyond = _long_query(junk=MAX_QUERY_WORDS_READ)
    assert len(compiler.terms(within)) == len(compiler.terms(beyond)) == MAX_QUERY_WORDS_READ
    assert "rare" in [f.id for f in db.facts.search(within, top_k=100)]
    assert all(f.id != "rare" for f in db.facts.search(beyond, top_k=100))
    seen.clear()
    db.facts.search(" ".join(f"w{i}" for i in range(100_000)))
    lookups = [b for sql, b in seen if "_vocab" in sql and "json_each" in sql]
    assert len(lookups) == 1 and len(lookups[0][0]) < 20 * MAX_QUERY_WORDS_READ
