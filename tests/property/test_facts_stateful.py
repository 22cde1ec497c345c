"""The SQLite fact store and its in-memory twin, driven through the same random steps,
must agree on every answer (SPEC section 7), and the SQLite file must stay healthy.

Search must return the same set of matches with the same scores (the twin computes FTS5's
BM25 itself), so only the order among equal scores may differ. After every step FTS5's
integrity-check compares the index with the facts it was built from: a stale posting (an
upsert that skipped the delete trigger) fails it.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from pgserver import new_agent_id

from sqlmem.config import StoreConfig
from sqlmem.errors import FactNotFoundError, InvalidArgumentError
from sqlmem.inmemory.facts import InMemoryFactStore
from sqlmem.records import Fact
from sqlmem.sqlite.core.engine import Engine
from sqlmem.sqlite.stores.facts import SQLiteFactStore

IDS = [f"f{i}" for i in range(8)] + ["telegram:1:", "ünï"]
WORDS = [
    "apple", "apples", "run", "running", "dog", "DOG", "the", "naïve", "naive",
    "跑步", "跑", "哈哈哈", "哈", "Python", "C++", "what's", "😀", "42", "x", "e.g.",
]  # fmt: skip
T0 = datetime(2020, 1, 1, tzinfo=timezone.utc)
TIMES = [T0 + timedelta(days=d) for d in (0, 0, 1, 2, 30)]  # repeats make ties
# Memory items (SPEC 12): expiry long past or far ahead, never near "now" (the two stores
# read the clock separately).
LAYERS = ["episodic", "semantic", "procedural"]
EXPIRIES = [None, None, T0, datetime(2200, 1, 1, tzinfo=timezone.utc)]
UNIT = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])

text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).flatmap(
    lambda words: st.sampled_from([" ".join(words), "".join(words), ", ".join(words)])
)
json_value = st.sampled_from([True, False, 1, 0, 1.0, "1", None, [1, 2], {"a": 1, "b": [2]}])
facts = st.builds(
    Fact,
    id=st.sampled_from(IDS),
    content=text,
    source=st.sampled_from(["", "chat", "web"]),
    tags=st.lists(st.sampled_from(["a", "b", "c"]), max_size=3),
    category=st.sampled_from(["", "work", "work/x", "work/x/y", "workx", "home"]),
    metadata=st.dictionaries(st.sampled_from(["k", "a.b", "z"]), json_value, max_size=2),
    created_at=st.none() | st.sampled_from(TIMES),
    layer=st.sampled_from(LAYERS),
    kind=st.sampled_from(["", "fix", "preference"]),
    confidence=UNIT,
    salience=UNIT,
    references=st.lists(st.sampled_from(["m:1", "m:2", "doc"]), max_size=2),
    expires_at=st.sampled_from(EXPIRIES),
)
# What `remember` is given: a few texts that normalise alike, new ids or stored ones.
remembered = st.builds(
    Fact,
    id=st.sampled_from(["", "", "", *IDS[:3]]),
    content=st.sampled_from(["Tea is good.", "tea  is GOOD", "run dog", "Run dog."]),
    tags=st.lists(st.sampled_from(["a", "b", "c"]), max_size=2),
    metadata=st.dictionaries(st.sampled_from(["k", "z"]), json_value, max_size=1),
    layer=st.sampled_from(LAYERS),
    confidence=UNIT,
    salience=UNIT,
    references=st.lists(st.sampled_from(["m:1", "m:2"]), max_size=2),
    expires_at=st.sampled_from(EXPIRIES),
    created_at=st.none() | st.sampled_from(TIMES),
)
# Facts that change: a few keys, dated or not (undated: valid from now).
VALID_FROM = st.none() | st.sampled_from(TIMES)
keyed = st.builds(
    Fact,
    id=st.sampled_from(["", "", "", *IDS[:4]]),
    content=st.sampled_from(["lives in Paris", "lives in Oslo", "run dog", "Tea is good."]),
    key=st.sampled_from(["user.city", "user.job", ""]),
    layer=st.sampled_from(LAYERS[1:]),
    valid_from=VALID_FROM,
    created_at=st.none() | st.sampled_from(TIMES),
)
item_filters = st.fixed_dictionaries(
    {},
    optional={
        "layer": st.sampled_from(LAYERS) | st.lists(st.sampled_from(LAYERS), max_size=2),
        "kind": st.sampled_from(["", "fix"]),
        "min_confidence": UNIT,
    },
)
filters = st.fixed_dictionaries(
    {},
    optional={
        "tags": st.lists(st.sampled_from(["a", "b", "c"]), max_size=2),
        "category": st.sampled_from(["", "work", "work/x", "home"]),
        "source": st.sampled_from(["", "chat", "web"]),
        "since": st.sampled_from(TIMES),
        "until": st.sampled_from(TIMES),
        "metadata": st.dictionaries(st.sampled_from(["k", "a.b"]), json_value, max_size=1),
    },
)


def comparable(fact: Fact | None) -> dict[str, Any] | None:
    """A fact without what legitimately differs: `now` is taken separately by each store."""
    if fact is None:
        return None
    data = fact.model_dump(exclude={"updated_at", "score"})
    assert data["created_at"] is not None
    if data["created_at"] > T0 + timedelta(days=365):
        data["created_at"] = "now"
    data["confidence"] = round(data["confidence"], 12)  # 1-(1-a)(1-b), same in both
    for field in ("valid_from", "valid_to"):  # an undated version is valid from now
        if data[field] is not None and data[field] > T0 + timedelta(days=365):
            data[field] = "now"
    return data


class FactStoresAgree(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="sqlmem-facts-"))
        self.engine = Engine(self.dir / "facts.db", StoreConfig())
        self.sqlite = SQLiteFactStore(self.engine)
        self.memory = InMemoryFactStore()
        self.ids: set[str] = set(IDS)  # every id a step may have stored

    def teardown(self) -> None:
        self.engine.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def both(self, method: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        return (
            getattr(self.sqlite, method)(*args, **kwargs),
            getattr(self.memory, method)(*args, **kwargs),
        )

    @initialize(batch=st.lists(facts, min_size=3, max_size=10))
    def start(self, batch: list[Fact]) -> None:
        self.index_many(batch)

    @rule(fact=facts)
    def index(self, fact: Fact) -> None:
        a, b = self.both("index", fact)
        assert a == b == fact.id

    @rule(batch=st.lists(facts, max_size=6))
    def index_many(self, batch: list[Fact]) -> None:
        a, b = self.both("index_many", batch)
        assert a == b == [f.id for f in batch]

    @rule(fact=remembered)
    def remember(self, fact: Fact) -> None:
        a, b = self.both("remember", fact)
        assert a == b
        event("remember: " + ("inserted or indexed" if a == fact.id else "merged"))
        self.ids.add(a)

    @rule(fact=keyed)
    def remember_keyed(self, fact: Fact) -> None:
        a, b = self.both("remember", fact)
        assert a == b
        self.ids.add(a)

    @rule(old=st.sampled_from([*IDS[:4], "unknown"]), fact=keyed)
    def supersede(self, old: str, fact: Fact) -> None:
        fact = fact.model_copy(update={"key": ""})
        outcomes = []
        for store in (self.sqlite, self.memory):
            try:
                outcomes.append(store.supersede(old, fact))
            except (FactNotFoundError, InvalidArgumentError) as exc:
                outcomes.append(type(exc).__name__)
        assert outcomes[0] == outcomes[1]
        self.ids.add(fact.id)

    @rule(
        key=st.sampled_from(["user.city", "user.job"]),
        fact_id=st.sampled_from([*IDS[:4], "unknown"]),
    )
    def history(self, key: str, fact_id: str) -> None:
        for args in ({"key": key}, {"id": fact_id}):
            a, b = self.both("history", **args)
            assert [comparable(f) for f in a] == [comparable(f) for f in b]

    @rule(query=st.sampled_from(["lives", "run dog", "tea Paris"]), at=st.sampled_from(TIMES))
    def as_of(self, query: str, at: datetime) -> None:
        a, b = self.both("search", query, 50, as_of=at)
        assert sorted(f.id for f in a) == sorted(f.id for f in b)
        a, b = self.both("list", limit=100, as_of=at)
        assert [f.id for f in a] == [f.id for f in b]

    @rule(fact_id=st.sampled_from([*IDS, "unknown"]), layer=st.sampled_from(LAYERS))
    def promote(self, fact_id: str, layer: str) -> None:
        outcomes = []
        for store in (self.sqlite, self.memory):
            try:
                outcomes.append(comparable(store.promote(fact_id, layer)))
            except FactNotFoundError:
                outcomes.append("missing")
        assert outcomes[0] == outcomes[1]

    @rule(
        from_layer=st.sampled_from(LAYERS),
        to_layer=st.sampled_from(LAYERS),
        min_confidence=UNIT,
        min_hits=st.sampled_from([1, 2, 3]),
    )
    def promote_eligible(
        self, from_layer: str, to_layer: str, min_confidence: float, min_hits: int
    ) -> None:
        if from_layer == to_layer:
            return
        a, b = self.both(
            "promote_eligible",
            from_layer=from_layer,
            to_layer=to_layer,
            min_confidence=min_confidence,
            min_hits=min_hits,
        )
        assert a == b

    @rule()
    def expire(self) -> None:
        a, b = self.both("expire")
        assert a == b
        event(f"expire: {'some' if a else 'none'}")

    @rule(
        query=st.sampled_from(WORDS) | st.sampled_from(["tea", "dog good"]),
        where=item_filters,
        top_k=st.sampled_from([1, 100]),
    )
    def search_items(self, query: str, where: dict[str, Any], top_k: int) -> None:
        self.search(query, "any", top_k, where)
        a, b = self.both("list", limit=100, **where)
        assert [comparable(f) for f in a] == [comparable(f) for f in b]

    @rule(fact_id=st.sampled_from([*IDS, "unknown"]))
    def delete(self, fact_id: str) -> None:
        outcomes = []
        for store in (self.sqlite, self.memory):
            try:
                store.delete(fact_id)
                outcomes.append("deleted")
            except FactNotFoundError:
                outcomes.append("missing")
        assert outcomes[0] == outcomes[1]

    @rule(fact_ids=st.lists(st.sampled_from([*IDS, "unknown"]), max_size=4))
    def delete_many(self, fact_ids: list[str]) -> None:
        a, b = self.both("delete_many", fact_ids)
        assert a == b

    @rule(
        query=st.sampled_from(WORDS) | text | st.text(max_size=8),
        mode=st.sampled_from(["any", "all"]),
        top_k=st.sampled_from([1, 3, 100]),
        where=st.just({}) | filters,
    )
    def search(self, query: str, mode: str, top_k: int, where: dict[str, Any]) -> None:
        a, b = self.both("search", query, top_k, mode=mode, **where)
        assert len(a) == len(b)
        event("search: " + ("matches" if a else "no match") + (" (filtered)" if where else ""))
        # Same scores in the same order; ids may differ only among equal scores.
        for x, y in zip(a, b, strict=True):
            assert math.isclose(x.score, y.score, rel_tol=1e-9, abs_tol=1e-12), (x, y)
        if top_k == 100:  # every match: the same set, with the same score for each
            assert {f.id for f in a} == {f.id for f in b}
            scores = {f.id: f.score for f in b}
            assert all(math.isclose(f.score, scores[f.id], rel_tol=1e-9) for f in a)
            assert [comparable(f) for f in sorted(a, key=lambda f: f.id)] == [
                comparable(f) for f in sorted(b, key=lambda f: f.id)
            ]

    @rule(
        word=st.sampled_from(WORDS),
        mode=st.sampled_from(["any", "all"]),
        where=st.just({}) | filters,
    )
    def search_word(self, word: str, mode: str, where: dict[str, Any]) -> None:
        self.search(word, mode, 100, where)
        self.search(word, mode, 2, where)

    @rule(where=filters, limit=st.sampled_from([1, 5, 50]), offset=st.sampled_from([0, 2]))
    def list(self, where: dict[str, Any], limit: int, offset: int) -> None:
        where.pop("metadata", None)
        a, b = self.both("list", limit=limit, offset=offset, **where)
        assert [comparable(f) for f in a] == [comparable(f) for f in b]

    @rule(key=st.sampled_from(["k", "a.b", "z"]), value=json_value)
    def search_by_metadata(self, key: str, value: Any) -> None:
        a, b = self.both("search_by_metadata", key, value)
        assert [comparable(f) for f in a] == [comparable(f) for f in b]

    @invariant()
    def same_contents(self) -> None:
        assert self.sqlite.count() == self.memory.count() == len(self.sqlite)
        for fact_id in sorted(self.ids):
            a, b = self.both("get", fact_id)
            assert comparable(a) == comparable(b)
        assert self.sqlite.tags() == self.memory.tags()
        assert self.sqlite.categories() == self.memory.categories()
        a, b = self.both("list", limit=1000)
        assert [comparable(f) for f in a] == [comparable(f) for f in b]

    @invariant()
    def index_is_healthy(self) -> None:
        with self.engine.write() as conn:
            conn.execute("INSERT INTO facts_fts(facts_fts, rank) VALUES ('integrity-check', 1)")


FactStoresAgree.TestCase.settings = settings(max_examples=80, stateful_step_count=25, deadline=None)
test_fact_stores_agree = pytest.mark.filterwarnings("error")(FactStoresAgree.TestCase)


# -- PostgreSQL (issue 21): the same steps, the PostgreSQL store against the twin ------------
#
# Scores must agree to 1e-9 with the twin's (so with FTS5's -bm25()): the statistics kept in
# corpus_stats and the frequencies read from the tsvector must be exact. A neighbour agent
# indexes and deletes the same ids between steps: a leak across agents would show in
# counts, tags, gets and scores.

_PG: dict[str, Any] = {}


@pytest.fixture(autouse=True)
def _pg_backend(request: pytest.FixtureRequest) -> None:
    if "postgres" in request.node.nodeid.lower():
        _PG["backend"] = request.getfixturevalue("pg_backend")


class PostgresFactStoresAgree(FactStoresAgree):
    def __init__(self) -> None:  # the PostgreSQL store takes the SQLite store's place
        RuleBasedStateMachine.__init__(self)
        self.db = _PG["backend"].open(new_agent_id())
        self.neighbour = _PG["backend"].open(new_agent_id())
        self.sqlite = self.db.facts
        self.memory = InMemoryFactStore()
        self.ids = set(IDS)

    def teardown(self) -> None:
        self.db.close()
        self.neighbour.close()

    @rule(
        batch=st.lists(facts, max_size=3),
        gone=st.lists(st.sampled_from(IDS), max_size=2),
        fact=remembered,
    )
    def neighbour_writes(self, batch: list[Fact], gone: list[str], fact: Fact) -> None:
        self.neighbour.facts.index_many(batch)
        self.neighbour.facts.delete_many(gone)
        self.neighbour.facts.remember(fact)  # a merge into a neighbour's row would show
        self.neighbour.facts.promote_eligible(from_layer="episodic", min_hits=1)
        self.neighbour.facts.expire()

    @invariant()
    def index_is_healthy(self) -> None:
        """corpus_stats holds exactly the agent's row and token counts."""
        store = self.sqlite
        with store._engine.read() as conn:  # type: ignore[attr-defined]
            kept = conn.execute(
                "SELECT docs, tokens FROM corpus_stats WHERE agent_id = %s AND corpus = 1",
                (self.db.agent_id,),
            ).fetchone()
            real = conn.execute(
                "SELECT count(*), coalesce(sum(doc_len), 0) FROM facts WHERE agent_id = %s",
                (self.db.agent_id,),
            ).fetchone()
        assert tuple(kept or (0, 0)) == tuple(real)


PostgresFactStoresAgree.TestCase.settings = settings(
    max_examples=30, stateful_step_count=20, deadline=None
)
test_postgres_fact_stores_agree = PostgresFactStoresAgree.TestCase
