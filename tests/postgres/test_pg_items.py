"""The 0.2 protocols on PostgreSQL beyond the shared contract suites (issue 21, stage 2):
what is refused and how, the upgrade of a version-1 database, `remember` from several
processes, and metadata operators in jsonb agreeing with the twin on every JSON value."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pgserver import new_agent_id

import sqlmem.postgres as sp
from sqlmem.embedders import HashEmbedder
from sqlmem.errors import InvalidArgumentError
from sqlmem.inmemory.facts import InMemoryFactStore
from sqlmem.postgres.migrations import latest_version, load_migrations
from sqlmem.records import Fact, Message
from sqlmem.rules.identity import fingerprint
from sqlmem.search.vectors import hybrid_leg_size, reciprocal_rank_fusion

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def test_raw_mode_is_refused_with_a_clear_error(open_pg: Any) -> None:
    facts = open_pg().facts
    facts.index(Fact(id="a", content="tea with milk"))
    with pytest.raises(InvalidArgumentError, match="raw"):
        facts.search("tea", mode="raw")
    with pytest.raises(InvalidArgumentError, match="embedder"):
        facts.search("tea", mode="vector")
    assert [f.id for f in facts.search("tea")] == ["a"]  # the store still works


# -- the upgrade from version 1 (stage 1's schema) ---------------------------------------


@pytest.fixture
def fresh_db(pg_dsn: str) -> Iterator[str]:
    name = "u_" + new_agent_id().replace("-", "_")
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield psycopg.conninfo.make_conninfo(pg_dsn, dbname=name)
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


_V1_ROWS = """
INSERT INTO facts (agent_id, id, content, source, category, tags, tag_set, metadata, meta,
                   created_at, updated_at, doc_len, tsv)
VALUES ('old', 'f1', 'The user likes tea.', '', '', '["drink"]', '{drink}',
        '{"n":1,"f":1e+20,"s":"a\\u0000"}', '{"n":1,"f":1e+20,"s":"\\ue000a\\\\0"}',
        1000, 1000, 4, $$'the':1 'user':2 'like':3 'tea':4$$);
INSERT INTO corpus_stats (agent_id, corpus, docs, tokens) VALUES ('old', 1, 1, 4), ('old', 2, 2, 2);
INSERT INTO sessions (agent_id, session_id, last_seq, created_at, updated_at)
VALUES ('old', 's', 2, 1000, 1000);
INSERT INTO messages (agent_id, session_id, seq, role, content, created_at, doc_len, tsv)
VALUES ('old', 's', 1, 'user', 'hello', 1000, 1, $$'hello':1$$),
       ('old', 's', 2, 'assistant', 'hi', 1000, 1, $$'hi':1$$);
"""


def test_a_version_1_database_upgrades_and_keeps_its_rows(fresh_db: str) -> None:
    """Rows written by stage 1 (0.1 protocols) get the item defaults, their fingerprints
    at the first open, and work with every 0.2 call."""
    first = load_migrations()[0]
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE sqlmem_schema_version (version integer PRIMARY KEY, name text NOT NULL,"
            " sha256 text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        conn.execute(first.sql.encode())
        conn.execute(
            "INSERT INTO sqlmem_schema_version(version, name, sha256) VALUES (1, %s, %s)",
            (first.name, first.sha256),
        )
        conn.execute(_V1_ROWS.encode())
    with sp.open(fresh_db, "old") as db:
        fact = db.facts.get("f1")
        assert fact is not None
        assert (fact.layer, fact.kind, fact.confidence, fact.hits) == ("semantic", "", 1.0, 1)
        assert fact.fingerprint == fingerprint("The user likes tea.")
        assert db.facts.remember(Fact(content="the user likes tea", tags=["x"])) == "f1"
        merged = db.facts.get("f1")
        assert merged is not None and merged.hits == 2 and merged.tags == ["drink", "x"]
        assert [f.id for f in db.facts.list(metadata={"n": {"$gte": 1}})] == ["f1"]
        # version 1's jsonb forms (1e+20 read as an integer, NUL escaped by `encode`)
        # were rewritten at the first open: the typed operators see a float and "a\0"
        assert [f.id for f in db.facts.list(metadata={"f": 1e20, "s": {"$lt": "a\x01"}})] == ["f1"]
        assert db.facts.list(metadata={"f": 10**20}) == []
        assert db.history.count("s") == 2
        popped = db.history.pop("s")
        assert popped is not None and popped.content == "hi"
        assert db.history.append("s", Message(role="user", content="again")) == 3
        assert db.history.count("s") == 2
    with psycopg.connect(fresh_db) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM sqlmem_schema_version")]
    assert versions == list(range(1, latest_version() + 1))


# -- remember from several processes ---------------------------------------------------------

_REMEMBER = """
import sys, time
import sqlmem, sqlmem.postgres as sp
dsn, agent, start, count = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
with sp.open(dsn, agent, sqlmem.StoreConfig(busy_timeout_ms=30_000), pool_size=1) as db:
    while time.time() < start:
        time.sleep(0.0005)
    for i in range(count):
        db.facts.remember(sqlmem.Fact(content="The user's name is Ada" + "." * (i % 2)))
"""


def test_processes_remembering_one_text_leave_one_fact(pg_dsn: str) -> None:
    """The lookup runs after the agent's corpus row is locked: no two inserts."""
    agent, per_child, children = new_agent_id(), 25, 3
    start = time.time() + 1.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _REMEMBER, pg_dsn, agent, str(start), str(per_child)],
            stderr=subprocess.PIPE,
        )
        for _ in range(children)
    ]
    errors = [p.communicate(timeout=120)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * children, errors
    with sp.open(pg_dsn, agent) as db:
        facts = db.facts.list()
        assert len(facts) == 1 and db.facts.count() == 1
        assert facts[0].hits == children * per_child


# -- metadata operators: jsonb against the twin's Python predicate ---------------------------


def test_numbers_keep_their_json_type_and_exact_value(open_pg: Any) -> None:
    """jsonb has one number type: floats are stored so that 1e20 is not 10**20, and an
    int is ordered against a float by the float's exact value, as Python does."""
    facts = open_pg().facts
    values = {"i": 10**20, "f": 1e20, "big": 10**17 + 1, "neg0": -0.0, "tiny": 5e-324}
    facts.index_many([Fact(id=k, content="x", metadata={"v": v}) for k, v in values.items()])

    def ids(expr: Any) -> set[str]:
        return {f.id for f in facts.list(metadata={"v": expr}, limit=100)}

    assert ids(10**20) == {"i"} and ids(1e20) == {"f"}
    assert ids({"$in": [1e20, 0.0]}) == {"f", "neg0"}
    assert ids({"$gt": 1e17}) == {"i", "f", "big"}
    assert ids({"$gt": 0}) == {"i", "f", "big", "tiny"}
    assert ids({"$lte": 0.0}) == {"neg0"}


_texts = st.text(st.sampled_from("ab\x00\x01é😀"), max_size=3)
_numbers = (
    st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0, 1, 1.0, -0.0, 2**53, 2.0**53, 2**53 + 1, 10**20, 1e20, 0.1])
)
_scalars = st.none() | st.booleans() | _numbers | _texts
_containers = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=2)
        | st.dictionaries(st.sampled_from(["a", "b\x00"]), inner, max_size=2)
    ),
    max_leaves=4,
)
# Strings and numbers (the orderings) far more often than containers.
_values = _texts | _numbers | _scalars | _containers
_ops = st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists"])


@st.composite
def _expressions(draw: st.DrawFn) -> Any:
    op = draw(_ops)
    if op == "$exists":
        return {op: draw(st.booleans())}
    if op in ("$in", "$nin"):
        return {op: draw(st.lists(_values, max_size=3))}
    return {op: draw(_values)}


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    stored=st.lists(_values, min_size=1, max_size=6),
    queries=st.lists(_expressions() | _values, min_size=1, max_size=6),
)
def test_metadata_filters_agree_with_the_twin(
    pg_backend: Any, stored: list[Any], queries: list[Any]
) -> None:
    db = pg_backend.open(new_agent_id())
    try:
        twin = InMemoryFactStore()
        batch = [
            Fact(id=f"f{i}", content="x", metadata={"v": v}, created_at=T0)
            for i, v in enumerate(stored)
        ]
        batch.append(Fact(id="absent", content="x", created_at=T0))
        db.facts.index_many(batch)
        twin.index_many(batch)
        # the stored values themselves as bounds: orderings between close values
        bounds = [{op: v} for v in stored for op in ("$lt", "$gte")]
        for query in [*queries, *bounds]:
            want = {f.id for f in twin.list(metadata={"v": query}, limit=100)}
            got = {f.id for f in db.facts.list(metadata={"v": query}, limit=100)}
            assert got == want, query
            hits = {f.id for f in db.facts.search("x", 100, metadata={"v": query})}
            assert hits == want, query
        for value in stored:  # search_by_metadata: literal, typed equality
            want_ids = [f.id for f in twin.search_by_metadata("v", value)]
            assert [f.id for f in db.facts.search_by_metadata("v", value)] == want_ids
    finally:
        db.close()


# -- vectors (SPEC 17): the same cosines and fused ranks as the twin's -----------------------

_WORDS = ["red", "green", "tea", "apple", "car", "sea", "sky", "blue", "fast", "slow"]


@settings(max_examples=20, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(_WORDS), min_size=1, max_size=5), min_size=1, max_size=12
    ),
    query=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3),
    top_k=st.integers(1, 8),
)
def test_vector_and_hybrid_search_agree_with_the_twin(
    pg_dsn: str, texts: list[list[str]], query: list[str], top_k: int
) -> None:
    embedder = HashEmbedder(16)
    twin = InMemoryFactStore(embedder=embedder)
    neighbour = sp.open(pg_dsn, new_agent_id(), embedder=embedder, pool_size=1)
    with sp.open(pg_dsn, new_agent_id(), embedder=embedder, pool_size=1) as db:
        for i, words in enumerate(texts):
            fact = Fact(id=f"f{i}", content=" ".join(words), tags=[words[0]])
            db.facts.index(fact)
            twin.index(fact)
            neighbour.facts.index(fact.model_copy(update={"content": "sky " + fact.content}))
        q = " ".join(query)
        for kwargs in ({}, {"tags": [query[0]]}):
            a = db.facts.search(q, mode="vector", top_k=top_k, **kwargs)
            b = twin.search(q, mode="vector", top_k=top_k, **kwargs)
            assert [f.score for f in a] == pytest.approx([f.score for f in b], abs=1e-6)
            assert [f.id for f in a] == [f.id for f in b]  # equal cosines: insertion order
            # Hybrid fuses ranks: BM25 scores agree with the twin's to ~1e-15 only, so
            # near-ties may rank apart; the fusion is checked on this store's own legs.
            leg = hybrid_leg_size(top_k)
            lexical = [f.id for f in db.facts.search(q, leg, mode="any", **kwargs)]
            semantic = [f.id for f in db.facts.search(q, leg, mode="vector", **kwargs)]
            fused = db.facts.search(q, mode="hybrid", top_k=top_k, **kwargs)
            expected = reciprocal_rank_fusion(lexical, semantic, top_k)
            assert [(f.id, f.score) for f in fused] == expected
    neighbour.close()


def test_a_backend_embedder_serves_every_agent(pg_dsn: str) -> None:
    embedder = HashEmbedder(16)
    with sp.PostgresBackend(pg_dsn, pool_size=2, embedder=embedder) as backend:
        for agent in (new_agent_id(), new_agent_id()):
            db = backend.open(agent)
            assert db.facts.embedder is embedder
            db.facts.index(Fact(id="a", content="green tea"))
            assert [f.id for f in db.facts.search("green tea", mode="vector")] == ["a"]
    with pytest.raises(InvalidArgumentError, match="embedder"):
        sp.PostgresBackend(pg_dsn, embedder=object())
