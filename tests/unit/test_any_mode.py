"""Mode "any": exact on small stores, the rare/common shortcut on large ones.

The shortcut (sqlmem.sqlite.stores.fts_any) only runs on stores of at least EXACT_BELOW facts; the
tests lower that threshold so a few thousand facts stand in for a large store.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

import sqlmem
from sqlmem import Fact
from sqlmem.sqlite.stores import facts_sql, fts_any

OpenDB = Callable[..., sqlmem.MemoryDB]


def _exact(db: sqlmem.MemoryDB, words: list[str], k: int) -> list[tuple[str, float]]:
    """The exact OR ranking, through raw mode (which the shortcut never touches)."""
    hits = db.facts.search(" OR ".join(f'"{w}"' for w in words), k, mode="raw")
    return [(f.id, f.score or 0.0) for f in hits]


@pytest.fixture(autouse=True)
def _scaled_down(monkeypatch: pytest.MonkeyPatch) -> None:
    """3,000 facts stand in for a large store: the shortcut's thresholds scale with them
    (rare = in at most 1% of rows, so 'zebra' and 'quokka' are rare, 'the' common)."""
    monkeypatch.setattr(fts_any, "EXACT_BELOW", 1000)
    monkeypatch.setattr(fts_any, "RARE_SHARE", 0.01)


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
    ran = _record_queries(monkeypatch)
    got = large.facts.search("the zebra", 10)
    # ~6 facts are expected to hold both words: the rare word's OR, then the AND query;
    # no fallback to the exact OR query.
    assert ran == ['"zebra"', '"the" AND "zebra"']
    assert len(got) == 10
    assert all("zebra" in f.content for f in got)  # all 12 zebra facts outrank 'the' only
    exact = dict(_exact(large, ["the", "zebra"], 3000))
    for fact in got:  # scores are the exact OR scores
        assert fact.score == pytest.approx(exact[fact.id], rel=1e-9)
    assert [f.score for f in got] == sorted((f.score for f in got), reverse=True)


def _record_queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Lowers EXACT_BELOW so 3,000 facts count as large; returns the MATCH texts run."""
    monkeypatch.setattr(fts_any, "EXACT_BELOW", 1000)
    ran: list[str] = []
    real_run = fts_any._run

    def run(conn: Any, text: str, params: dict[str, Any]) -> list[Any]:
        assert text == facts_sql.ANY.bm25
        ran.append(params["query"])
        return real_run(conn, text, params)

    monkeypatch.setattr(fts_any, "_run", run)
    return ran


def test_shortcut_skips_the_and_query_when_no_row_should_hold_every_word(
    large: sqlmem.MemoryDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'the zebra quokka': 3000 * 1/2 * 12/3000 * 5/3000 = 0.01 rows expected to hold all
    three, so only the rare words' OR runs; its facts rank by their rare words."""
    ran = _record_queries(monkeypatch)
    got = large.facts.search("the zebra quokka", 10)
    assert ran == ['"zebra" OR "quokka"']
    rare_only = _exact(large, ["zebra", "quokka"], 10)
    assert [(f.id, f.score) for f in got] == rare_only
    exact = dict(_exact(large, ["the", "zebra", "quokka"], 3000))
    for fact in got:  # never above the exact score: the common word's share is left out
        assert fact.score is not None and fact.score <= exact[fact.id] + 1e-9
        if "the" not in fact.content.split():
            assert fact.score == pytest.approx(exact[fact.id], rel=1e-9)


def test_dfs_come_from_one_vocabulary_scan(
    large: sqlmem.MemoryDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Words are not counted one by one: the table's vocabulary is read once, and again
    only when the table has grown by more than the drift share."""
    ran: list[str] = []
    shortcut = large.facts._any
    with large._engine.read() as conn:
        conn.set_exec_trace(lambda _c, sql, _b: ran.append(sql) or True)
        shortcut.rows(conn, _terms(large, "zebra quokka the"), 10)
        assert ran[:2] == [facts_sql.ANY.averages, facts_sql.ANY.vocabulary]
        # Exact dfs (porter stems: "the" and "zebra" are their own stems); words in a
        # single row are left out of the map and count as 1.
        assert shortcut._vocabulary["the"] == 1500
        assert shortcut._vocabulary["zebra"] == 12
        assert shortcut._vocabulary["quokka"] == 5
        ran.clear()
        shortcut.rows(conn, _terms(large, "w1 w2 zebra"), 10)
        assert facts_sql.ANY.vocabulary not in ran
        assert facts_sql.ANY.phrase_docs not in ran
        conn.set_exec_trace(None)
    large.facts.index_many(Fact(id=f"new{i}", content=f"the okapi w{i}") for i in range(200))
    with large._engine.read() as conn:
        shortcut.rows(conn, _terms(large, "the zebra"), 10)  # +6.7%: within the drift
        assert "okapi" not in shortcut._vocabulary
    large.facts.index_many(Fact(id=f"more{i}", content=f"the okapi v{i}") for i in range(200))
    with large._engine.read() as conn:
        shortcut.rows(conn, _terms(large, "the zebra"), 10)  # +13%: scanned again
        assert shortcut._vocabulary["okapi"] == 400
        assert shortcut._vocabulary["the"] == 1900


def test_phrases_of_several_tokens_are_counted_once(open_db: OpenDB) -> None:
    """A run of CJK characters is a phrase of one token per character: the vocabulary
    has no entry for it, so it is counted, once, and kept."""
    db = open_db()
    db.facts.index_many(
        Fact(id=f"f{i}", content=f"the w{i % 50} {'我喜欢编程' if i % 100 == 0 else ''}")
        for i in range(3000)
    )
    ran: list[str] = []
    with db._engine.read() as conn:
        conn.set_exec_trace(lambda _c, sql, _b: ran.append(sql) or True)
        for _ in range(2):
            db.facts._any.rows(conn, _terms(db, "the 喜欢编程"), 10)
        conn.set_exec_trace(None)
    assert ran.count(facts_sql.ANY.phrase_docs) == 1
    assert db.facts._any._phrase_df == {"喜 欢 编 程": 30}
    got = {f.id for f in db.facts.search("the 喜欢编程", 30)}
    assert got == {f"f{i}" for i in range(0, 3000, 100)}  # the rare phrase ranks first


def _terms(db: sqlmem.MemoryDB, text: str) -> list[Any]:
    return db.facts._query_compiler().terms(text)


def test_merge_keeps_the_full_score_of_a_row_in_both_lists() -> None:
    full = [("a", -5.0), ("b", -4.0)]
    partial = [("c", -4.5), ("a", -3.0), ("d", -1.0)]
    assert fts_any._merge(full, partial, 3) == [("a", -5.0), ("c", -4.5), ("b", -4.0)]
    assert fts_any._merge([], partial, 10) == partial


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
