"""Memory items (SPEC 12) on every FactStore: the new fields, remember's merge, promotion,
expiry, and the layer / kind / min_confidence filters. One suite, every implementation
(`make_facts` of conftest.py: a fresh SQLite file, the in-memory twin, or a fresh
PostgreSQL agent)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
import time
import unicodedata
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem.errors import FactNotFoundError, InvalidArgumentError
from sqlmem.protocols import FactStore
from sqlmem.records import Fact

MakeFacts = Callable[..., FactStore]  # the `make_facts` fixture (conftest.py)

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
PAST = datetime(2001, 1, 1, tzinfo=timezone.utc)
FUTURE = datetime(2100, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def store(make_facts: MakeFacts) -> FactStore:
    return make_facts()


def at(days: float) -> datetime:
    return T0 + timedelta(days=days)


def sha(text: str) -> str:
    """The fingerprint rule written out independently: NFKC, casefold, whitespace
    collapsed, trailing full stops dropped, hex SHA-256."""
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split()).rstrip(". ")
    return hashlib.sha256(folded.encode()).hexdigest()


# -- the fields --------------------------------------------------------------------------


def test_new_fields_have_their_defaults(store: FactStore) -> None:
    store.index(Fact(id="a", content="User likes tea."))
    got = store.get("a")
    assert got is not None
    assert (got.layer, got.kind, got.confidence, got.salience) == ("semantic", "", 1.0, 0.5)
    assert (got.references, got.expires_at, got.hits) == ([], None, 1)
    assert got.fingerprint == sha("User likes tea.") == sha("  user LIKES tea ")


def test_item_fields_come_back_equal_from_every_read(store: FactStore) -> None:
    fact = Fact(
        id="a",
        content="deploy with make release",
        tags=["ops"],
        category="work",
        metadata={"k": 1},
        created_at=at(0),
        updated_at=at(1),
        layer="procedural",
        kind="fix_2-b",
        confidence=0.25,
        salience=0.875,
        references=["msg:telegram:42:#17", "doc:MEMORY.md", "msg:telegram:42:#17", ""],
        expires_at=FUTURE + timedelta(microseconds=1500),  # kept to the millisecond
    )
    store.index(fact)
    assert store.get("a") == fact
    assert fact.expires_at == FUTURE + timedelta(milliseconds=1)
    assert [f.model_dump(exclude={"score"}) for f in store.search("release")] == [
        fact.model_dump(exclude={"score"})
    ]
    assert store.list() == [fact]
    assert store.search_by_metadata("k", 1) == [fact]


def test_naive_expires_at_is_utc() -> None:
    fact = Fact(content="x", expires_at=datetime(2100, 1, 1, 12, 0, 0, 123456))
    assert fact.expires_at == datetime(2100, 1, 1, 12, 0, 0, 123000, tzinfo=timezone.utc)


def test_index_leaves_hits_and_ignores_the_callers_output_fields(store: FactStore) -> None:
    first = store.remember(Fact(content="the cat is black", layer="episodic"))
    assert store.remember(Fact(content="The cat is black.", layer="episodic")) == first
    stored = store.get(first)
    assert stored is not None and stored.hits == 2
    # Written back as read, and with made-up output fields: hits stay, fingerprint is the
    # content's.
    store.index(stored.model_copy(update={"hits": 99, "fingerprint": "forged"}))
    again = store.get(first)
    assert again is not None
    assert (again.hits, again.fingerprint) == (2, sha("the cat is black"))
    store.index(Fact(id="new", content="fresh", hits=7))
    fresh = store.get("new")
    assert fresh is not None and fresh.hits == 1


# -- remember ------------------------------------------------------------------------------


def test_remember_inserts_a_new_fact_under_its_id(store: FactStore) -> None:
    fact = Fact(id="x1", content="Alice lives in Lyon", created_at=at(0), updated_at=at(0))
    assert store.remember(fact) == "x1"
    assert store.get("x1") == fact
    assert store.count() == 1


def test_remember_merges_by_fingerprint_as_spec_12_says(store: FactStore) -> None:
    stored = Fact(
        id="s",
        content="User prefers tea.",
        source="chat:1",
        category="prefs",
        kind="preference",
        tags=["drink", "morning"],
        references=["msg:1"],
        metadata={"a": 1, "b": {"x": 1}},
        confidence=0.5,
        salience=0.25,
        expires_at=FUTURE,
        created_at=at(0),
        updated_at=at(0),
    )
    store.index(stored)
    new = Fact(
        id="n",
        content="  user PREFERS tea ",
        source="chat:2",
        category="other",
        kind="decision",
        tags=["evening", "drink", "evening"],
        references=["msg:2", "msg:1"],
        metadata={"b": 2, "c": [1]},
        confidence=0.5,
        salience=0.75,
        expires_at=FUTURE + timedelta(days=1),
        created_at=at(9),
    )
    assert store.remember(new) == "s"
    assert store.get("n") is None
    assert store.count() == 1
    got = store.get("s")
    assert got is not None
    assert (got.content, got.source, got.category, got.kind) == (
        "User prefers tea.",
        "chat:1",
        "prefs",
        "preference",
    )
    assert got.tags == ["drink", "morning", "evening"]
    assert got.references == ["msg:1", "msg:2"]
    assert got.metadata == {"a": 1, "b": 2, "c": [1]}
    assert got.confidence == pytest.approx(0.75)
    assert got.salience == 0.75
    assert got.expires_at == FUTURE + timedelta(days=1)
    assert got.hits == 2
    assert got.created_at == at(0)
    assert got.updated_at is not None and got.updated_at > at(1000)  # now
    assert store.tags() == {"drink": 1, "evening": 1, "morning": 1}
    assert [f.id for f in store.search("evening", tags=["evening"])] == []  # tags, not text
    assert [f.id for f in store.list(tags=["evening"])] == ["s"]


@pytest.mark.parametrize(
    ("stored", "new", "want"),
    [(None, at(5), None), (at(500), None, None), (at(500), at(400), at(500))],
)
def test_remember_keeps_the_later_expiry_and_never_wins(
    store: FactStore, stored: datetime | None, new: datetime | None, want: datetime | None
) -> None:
    store.index(Fact(id="s", content="x y", expires_at=stored and stored + timedelta(days=9000)))
    store.remember(Fact(content="X  Y", expires_at=new and new + timedelta(days=9000)))
    got = store.get("s")
    assert got is not None
    assert got.expires_at == (want and want + timedelta(days=9000))


def test_remember_merges_within_one_layer_only(store: FactStore) -> None:
    a = store.remember(Fact(content="use ruff", layer="procedural"))
    b = store.remember(Fact(content="use ruff", layer="semantic"))
    assert a != b and store.count() == 2
    assert store.remember(Fact(content="Use ruff.", layer="procedural")) == a
    got = [store.get(a), store.get(b)]
    assert [f.hits for f in got if f is not None] == [2, 1]


def test_remember_picks_the_oldest_of_several_matches(store: FactStore) -> None:
    store.index_many(
        [
            Fact(id="newer", content="same text", created_at=at(5)),
            Fact(id="oldest", content="SAME text", created_at=at(1)),
            Fact(id="middle", content="same  text.", created_at=at(3)),
        ]
    )
    assert store.remember(Fact(content="same text")) == "oldest"
    hits = {i: f.hits for i in ("newer", "oldest", "middle") if (f := store.get(i)) is not None}
    assert hits == {"newer": 1, "oldest": 2, "middle": 1}


def test_remember_of_a_stored_id_behaves_like_index(store: FactStore) -> None:
    store.index(Fact(id="s", content="old words", tags=["a"]))
    store.remember(Fact(id="s2", content="old words"))  # merges: hits 2
    assert store.remember(Fact(id="s", content="new words", tags=["b"], layer="episodic")) == "s"
    got = store.get("s")
    assert got is not None
    assert (got.content, got.tags, got.layer, got.hits) == ("new words", ["b"], "episodic", 2)
    assert store.search("old") == []


def test_remember_never_merges_into_an_expired_fact(store: FactStore) -> None:
    store.index(Fact(id="gone", content="temporary note", expires_at=PAST))
    fresh = store.remember(Fact(content="temporary note"))
    assert fresh != "gone"
    got = store.get(fresh)
    assert got is not None and got.hits == 1
    assert store.count() == 1


def test_remember_refuses_what_index_refuses(store: FactStore) -> None:
    with pytest.raises(InvalidArgumentError):
        store.remember("not a fact")  # type: ignore[arg-type]
    bad = Fact(content="x")
    bad.confidence = float("nan")
    with pytest.raises(InvalidArgumentError, match="confidence"):
        store.remember(bad)
    bad = Fact(content="x")
    bad.layer = "working"  # type: ignore[assignment]
    with pytest.raises(InvalidArgumentError, match="layer"):
        store.index(bad)
    assert store.count() == 0


def test_eight_threads_remembering_one_text_leave_one_fact(store: FactStore) -> None:
    start = threading.Barrier(8)
    ids: list[str] = []
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            start.wait()
            for _ in range(5):
                ids.append(store.remember(Fact(content=f"The user is called Ada{'.' * (i % 2)}")))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.count() == 1 and len(set(ids)) == 1
    got = store.get(ids[0])
    assert got is not None and got.hits == 40


# -- promotion -----------------------------------------------------------------------------


def test_promote_moves_a_fact(store: FactStore) -> None:
    store.index(Fact(id="a", content="x", layer="episodic", created_at=at(0), updated_at=at(0)))
    got = store.promote("a", "procedural")
    assert got.layer == "procedural" and got == store.get("a")
    assert got.updated_at is not None and got.updated_at > at(1000)
    assert store.promote("a", "procedural") == got  # already there: unchanged
    with pytest.raises(FactNotFoundError):
        store.promote("missing", "semantic")
    store.index(Fact(id="old", content="y", expires_at=PAST))
    with pytest.raises(FactNotFoundError):
        store.promote("old", "semantic")
    with pytest.raises(InvalidArgumentError, match="layer"):
        store.promote("a", "working")


def test_promote_eligible_promotes_what_qualifies_inclusively(store: FactStore) -> None:
    def item(i: str, layer: str, confidence: float, hits: int, day: int, **kw: Any) -> None:
        store.index(
            Fact(id=i, content=f"item {i}", layer=layer, confidence=confidence, created_at=at(day))
        )
        for _ in range(hits - 1):
            store.remember(Fact(content=f"Item {i}.", layer=layer))
        # remember raised the confidence: set it back (index keeps the hits)
        update = {"confidence": confidence, **kw}
        store.index(store.get(i).model_copy(update=update))  # type: ignore[union-attr]

    item("late", "episodic", 0.75, 2, 9)
    item("early", "episodic", 0.9, 3, 1)
    item("weak", "episodic", 0.74, 5, 2)
    item("once", "episodic", 1.0, 1, 3)
    item("other", "procedural", 1.0, 5, 4)
    item("expired", "episodic", 1.0, 5, 5, expires_at=PAST)
    assert store.promote_eligible() == ["early", "late"]
    layers = {i: f.layer for i in ("late", "early", "weak", "once", "other") if (f := store.get(i))}
    assert layers == {
        "late": "semantic",
        "early": "semantic",
        "weak": "episodic",
        "once": "episodic",
        "other": "procedural",
    }
    assert store.promote_eligible() == []
    assert store.promote_eligible(min_confidence=0.0, min_hits=1) == ["weak", "once"]
    got = store.promote_eligible(
        from_layer="semantic", to_layer="procedural", min_confidence=0.9, min_hits=3
    )
    assert got == ["early"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"from_layer": "working"},
        {"to_layer": ""},
        {"from_layer": "semantic", "to_layer": "semantic"},
        {"min_confidence": float("nan")},
        {"min_confidence": "0.5"},
        {"min_hits": 1.5},
        {"min_hits": True},
    ],
)
def test_promote_eligible_refuses_bad_arguments(store: FactStore, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError):
        store.promote_eligible(**kwargs)


# -- expiry --------------------------------------------------------------------------------


def test_expired_facts_are_gone_for_every_read(store: FactStore) -> None:
    store.index_many(
        [
            Fact(id="live", content="apple pie", tags=["t"], category="a", metadata={"k": 1}),
            Fact(id="later", content="apple tart", tags=["t"], expires_at=FUTURE),
            Fact(
                id="gone",
                content="apple crumble",
                tags=["t", "only-gone"],
                category="b/c",
                metadata={"k": 1},
                expires_at=datetime.now(timezone.utc) - timedelta(milliseconds=1),
            ),
        ]
    )
    assert store.get("gone") is None
    assert {f.id for f in store.search("apple", 10)} == {"live", "later"}
    assert {f.id for f in store.search("apple", 10, tags=["t"])} == {"live", "later"}
    assert [f.id for f in store.search("crumble")] == []
    assert {f.id for f in store.list()} == {"live", "later"}
    assert [f.id for f in store.search_by_metadata("k", 1)] == ["live"]
    assert store.tags() == {"t": 2}
    assert store.categories() == ["a"]
    assert store.count() == len(store) == 2
    # A search for the best one only still finds one: expired facts never take a place.
    assert len(store.search("crumble apple", 1)) == 1
    assert store.expire() == 1
    assert store.expire() == 0
    assert store.count() == 2
    with pytest.raises(FactNotFoundError):
        store.delete("gone")


def test_expire_deletes_only_expired_facts(store: FactStore) -> None:
    store.index_many(
        [Fact(id=f"p{i}", content=f"past {i}", expires_at=PAST) for i in range(3)]
        + [Fact(id="f", content="future", expires_at=FUTURE), Fact(id="n", content="never")]
    )
    assert store.expire() == 3
    assert sorted(f.id for f in store.list()) == ["f", "n"]
    store.index(Fact(id="p0", content="past 0 is back"))  # the id is free again
    assert store.get("p0") is not None


# -- filters -------------------------------------------------------------------------------


@pytest.fixture
def items(store: FactStore) -> FactStore:
    store.index_many(
        [
            Fact(id="e1", content="coffee coffee coffee", layer="episodic", kind="event"),
            Fact(id="s1", content="coffee", layer="semantic", kind="preference", confidence=0.8),
            Fact(id="s2", content="coffee tea", layer="semantic", confidence=0.79),
            Fact(id="p1", content="brew coffee", layer="procedural", kind="fix", confidence=0.3),
        ]
    )
    return store


@pytest.mark.parametrize(
    ("where", "want"),
    [
        ({"layer": "semantic"}, {"s1", "s2"}),
        ({"layer": ["episodic", "procedural"]}, {"e1", "p1"}),
        ({"layer": ("procedural",)}, {"p1"}),
        ({"layer": []}, {"e1", "s1", "s2", "p1"}),
        ({"kind": "fix"}, {"p1"}),
        ({"kind": ""}, {"s2"}),
        ({"min_confidence": 0.8}, {"e1", "s1"}),
        ({"min_confidence": 1}, {"e1"}),
        ({"layer": "semantic", "min_confidence": 0.5, "kind": "preference"}, {"s1"}),
        ({"layer": "semantic", "kind": "fix"}, set()),
    ],
)
def test_item_filters_on_search_and_list(
    items: FactStore, where: dict[str, Any], want: set[str]
) -> None:
    assert {f.id for f in items.search("coffee", 10, **where)} == want
    assert {f.id for f in items.list(**where)} == want


def test_item_filters_apply_before_ranking(items: FactStore) -> None:
    """The best match (e1) is filtered out: top_k=1 still returns the best that passes."""
    assert [f.id for f in items.search("coffee", 1)] == ["e1"]
    assert [f.id for f in items.search("coffee", 1, layer="procedural")] == ["p1"]
    assert [f.id for f in items.search("coffee", 1, min_confidence=0.5, layer="semantic")] == ["s1"]
    assert [f.id for f in items.list(limit=1, layer="procedural")] == ["p1"]


@pytest.mark.parametrize(
    "where",
    [
        {"layer": "working"},
        {"layer": ["semantic", "nope"]},
        {"layer": 3},
        {"layer": b"semantic"},
        {"kind": "a b"},
        {"kind": 3},
        {"min_confidence": float("nan")},
        {"min_confidence": "0.5"},
        {"min_confidence": True},
    ],
)
def test_bad_item_filters_are_refused(store: FactStore, where: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError):
        store.search("x", **where)
    with pytest.raises(InvalidArgumentError):
        store.list(**where)


_REMEMBER = """
import sys, time
import sqlmem
start = float(sys.argv[2])
with sqlmem.open(sys.argv[1], sqlmem.StoreConfig(busy_timeout_ms=30_000)) as db:
    while time.time() < start:
        time.sleep(0.0005)
    for i in range(int(sys.argv[3])):
        db.facts.remember(sqlmem.Fact(content="The user's name is Ada" + "." * (i % 2)))
"""


def test_two_processes_remembering_one_text_leave_one_fact(tmp_path: Path) -> None:
    """SQLite here (the twin lives in one process; PostgreSQL's is in
    tests/postgres/test_pg_items.py): the lookup runs inside the write transaction, so two
    processes never both insert."""
    path = tmp_path / "memory.db"
    sqlmem.open(path).close()
    start = time.time() + 1.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _REMEMBER, str(path), str(start), "40"],
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    errors = [p.communicate(timeout=120)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    with sqlmem.open(path) as db:
        facts = db.facts.list()
        assert len(facts) == 1 and db.facts.count() == 1
        assert facts[0].hits == 80
