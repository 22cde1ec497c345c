"""History search within one session: the plans of sqlmem.sqlite.stores.history_search (filter
then rank for a small session, the exact statement for a large one) give the in-memory
twin's answers, for many queries on one interleaved file.

Files under `PLAN_BELOW` messages always take the exact statement; the tests lower the
thresholds so a few hundred messages stand in for a large file, and force each plan.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import pytest

import sqlmem
from sqlmem import Message
from sqlmem.sqlite.stores import history_search

OpenDB = Callable[..., sqlmem.MemoryDB]

#: Stems, case, CJK runs (phrases of several tokens), digits, a word in every message.
WORDS = ["apple", "apples", "run", "running", "dog", "DOG", "naïve", "跑步", "喜欢", "跑", "42"]
SESSIONS = {"small": 15, "mid": 60, "big": 300, "other": 120}
PLANS: dict[str, dict[str, Any]] = {
    "filter-first": {"SMALL_SESSION": 2**62},
    "exact": {"SMALL_SESSION": -1},
}


def _text(rng: random.Random) -> str:
    words = [rng.choice(WORDS) if rng.random() < 0.3 else f"w{int(rng.paretovariate(1.2))}"
             for _ in range(rng.randint(1, 12))]  # fmt: skip
    return (" " if rng.random() < 0.8 else "").join(["the", *words])


@pytest.fixture
def stores(open_db: OpenDB) -> tuple[Any, Any]:
    """The same interleaved sessions in a SQLite file and in the twin; some archived by
    compaction, one popped, one session purged."""
    rng = random.Random(19)
    db, twin = open_db(), sqlmem.inmemory.open()
    turns = [sid for sid, n in SESSIONS.items() for _ in range(n)] + ["gone"] * 30
    rng.shuffle(turns)
    for sid in turns:
        message = Message(role=rng.choice(["user", "assistant"]), content=_text(rng))
        assert db.history.append(sid, message) == twin.history.append(sid, message)
    for store in (db.history, twin.history):
        store.compact("mid", 20)
        store.pop("small")
        store.purge("gone")
    return db.history, twin.history


def _queries() -> list[str]:
    rng = random.Random(23)
    pool = [*WORDS, "the", "w1", "w2", "w7", "w40", "nothing"]
    return [" ".join(rng.sample(pool, rng.randint(1, 3))) for _ in range(40)]


def _agree(got: list[Message], want: list[Message], top_k: int) -> None:
    """Same scores rank by rank; the same messages wherever no tie could swap them."""
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert math.isclose(g.score or 0, w.score or 0, rel_tol=1e-9, abs_tol=1e-12)
    keys = {(m.session_id, m.seq): m for m in want}
    cutoff = (want[-1].score or 0) * (1 + 1e-9) if want else 0
    for m in got:
        if top_k == 1000 or (m.score or 0) > cutoff:
            assert keys[(m.session_id, m.seq)].content == m.content


@pytest.mark.parametrize("plan", PLANS)
def test_each_plan_answers_as_the_twin(
    plan: str, stores: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_search, "PLAN_BELOW", 1)
    monkeypatch.setattr(history_search, "RARE_SHARE", 1.0)  # every count exact
    for name, value in PLANS[plan].items():
        monkeypatch.setattr(history_search, name, value)
    sqlite, twin = stores
    hits = 0
    for query in _queries():
        for sid in [*SESSIONS, "gone", "unknown"]:
            for top_k in (1, 5, 1000):
                got = sqlite.search(query, session_id=sid, top_k=top_k)
                _agree(got, twin.search(query, session_id=sid, top_k=top_k), top_k)
                assert all(m.session_id == sid for m in got)
                hits += len(got)
    assert hits > 1000  # the queries do find messages


def test_small_files_take_the_exact_statement(
    stores: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below PLAN_BELOW indexed messages no plan runs (the twin's agreement tests and
    every small agent live there)."""
    ran: list[str] = []
    monkeypatch.setattr(history_search, "_filter_first", lambda *a: ran.append("filter"))
    sqlite, twin = stores
    got = sqlite.search("apple dog", session_id="big")
    _agree(got, twin.search("apple dog", session_id="big"), 10)
    assert got
    assert ran == []


@pytest.mark.parametrize(("size", "filtered"), [(15, True), (300, False)])
def test_the_plan_follows_the_sessions_size(
    size: int, filtered: bool, stores: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session of at most SMALL_SESSION messages is filtered first; a larger one takes
    the exact statement."""
    monkeypatch.setattr(history_search, "PLAN_BELOW", 1)
    monkeypatch.setattr(history_search, "SMALL_SESSION", 100)
    ran: list[int] = []
    original = history_search._filter_first

    def spy(*args: Any) -> Any:
        found = original(*args)
        ran.append(len(found))
        return found

    monkeypatch.setattr(history_search, "_filter_first", spy)
    sid = next(s for s, n in SESSIONS.items() if n == size)
    sqlite, twin = stores
    got = sqlite.search("apple", session_id=sid)
    _agree(got, twin.search("apple", session_id=sid), 10)
    assert got
    assert ran == ([len(got)] if filtered else [])
