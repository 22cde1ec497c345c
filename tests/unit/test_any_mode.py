"""Mode "any": exact on small stores, the rare/common shortcut on large ones.

The shortcut (sqlmem.fts_any) only runs on stores of at least EXACT_BELOW facts; the
tests lower that threshold so a few thousand facts stand in for a large store.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

import sqlmem
from sqlmem import Fact, facts_sql, fts_any

OpenDB = Callable[..., sqlmem.MemoryDB]


def _exact(db: sqlmem.MemoryDB, words: list[str], k: int) -> list[tuple[str, float]]:
    """The exact OR ranking, through raw mode (which the shortcut never touches)."""
    hits = db.facts.search(" OR ".join(f'"{w}"' for w in words), k, mode="raw")
    return [(f.id, f.score or 0.0) for f in hits]


@pytest.fixture
def large(open_db: OpenDB) -> sqlmem.MemoryDB:
    """3,000 facts: 'the' in every other one, 'zebra' in 12, 'quokka' in 5."""
    rng = random.Random(7)
    filler = [f"w{i}" for i in range(400)]
    facts = []
    for i in range(3000):
        words = rng.choices(filler, k=rng.randint(4, 20))
        if i % 2 == 0:
            words += ["the"] * rng.randint(1, 3)
        if i % 250 == 0:
            words.append("zebra")
        if i % 600 == 0:
            words.append("quokka")
        rng.shuffle(words)
        facts.append(Fact(id=f"f{i:04d}", content=" ".join(words)))
    db = open_db()
    db.facts.index_many(facts)
    return db


def test_small_store_is_exact(open_db: OpenDB) -> None:
    db = open_db()
    db.facts.index_many(
        Fact(id=f"f{i}", content=f"the {'zebra ' if i % 7 == 0 else ''}w{i % 13} w{i}")
        for i in range(500)
    )
    for words in (["the", "zebra"], ["the", "w3"], ["zebra", "w3", "w5"]):
        got = [(f.id, f.score) for f in db.facts.search(" ".join(words), 20)]
        assert got == _exact(db, words, 20)


def test_shortcut_puts_rare_word_facts_first(
    large: sqlmem.MemoryDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fts_any, "EXACT_BELOW", 1000)
    ran: list[str] = []
    real_run = fts_any._run
    monkeypatch.setattr(fts_any, "_run", lambda c, t, p: ran.append(t) or real_run(c, t, p))
    got = large.facts.search("the zebra", 10)
    assert ran == [facts_sql.ANY.split]  # the shortcut, no fallback
    assert len(got) == 10
    assert all("zebra" in f.content for f in got)  # all 12 zebra facts outrank 'the' only
    exact = dict(_exact(large, ["the", "zebra"], 3000))
    for fact in got:  # scores are the exact OR scores
        assert fact.score == pytest.approx(exact[fact.id], rel=1e-9)
    assert [f.score for f in got] == sorted((f.score for f in got), reverse=True)


def test_shortcut_falls_back_to_exact_when_rare_words_are_too_few(
    large: sqlmem.MemoryDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fts_any, "EXACT_BELOW", 1000)
    got = [(f.id, f.score) for f in large.facts.search("quokka the", 10)]
    assert got == _exact(large, ["quokka", "the"], 10)  # 5 quokka facts < 10: exact OR


def test_rare_only_and_single_word_queries_are_exact(
    large: sqlmem.MemoryDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fts_any, "EXACT_BELOW", 1000)
    for words in (["zebra", "quokka"], ["the"], ["zebra"]):
        got = [f.score for f in large.facts.search(" ".join(words), 10)]
        assert got == pytest.approx([s for _, s in _exact(large, words, 10)], rel=1e-9)


def test_common_words_only_use_and(large: sqlmem.MemoryDB, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fts_any, "EXACT_BELOW", 1000)
    monkeypatch.setattr(fts_any, "RARE_SHARE", 0.001)  # w-words (~5% each) are common
    got = large.facts.search("the w1", 10)
    assert len(got) == 10
    assert all({"the", "w1"} <= set(f.content.split()) for f in got)


def test_filters_keep_the_exact_path(
    large: sqlmem.MemoryDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fts_any, "EXACT_BELOW", 1000)
    got = large.facts.search("the quokka", 10, source="")
    assert [f.id for f in got] == [i for i, _ in _exact(large, ["the", "quokka"], 10)]


def test_row_count_comes_from_the_fts_averages(large: sqlmem.MemoryDB) -> None:
    with large._engine.read() as conn:
        assert fts_any.fts_row_count(conn, facts_sql.ANY) == 3000
    large.facts.delete("f0000")
    with large._engine.read() as conn:
        assert fts_any.fts_row_count(conn, facts_sql.ANY) == 2999
