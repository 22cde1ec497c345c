"""PostgreSQL's own promises for documents, atomic(), maintenance and scopes (SPEC 8, 14,
19, 20): agents apart, NUL kept, writers of several servers queued, a pinned connection
per block, a killed block leaving nothing, and `check()` finding what it is for."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pgserver import new_agent_id

import sqlmem.postgres as sp
from sqlmem import AgentMemoryConfig, Fact, MemoryFactory, Message, StoreConfig
from sqlmem.errors import (
    DocumentNotFoundError,
    InvalidAgentIdError,
    SqlmemError,
    StorageBusyError,
)
from sqlmem.inmemory.docs import InMemoryDocumentStore


def _user(text: str) -> Message:
    return Message(role="user", content=text)


# -- documents --------------------------------------------------------------------------------


def test_two_agents_with_the_same_paths_never_see_each_other(open_pg: Any) -> None:
    a, b = open_pg(), open_pg()
    a.docs.write("MEMORY.md", "alpha apples")
    a.docs.write("MEMORY.md", "alpha apples, again")
    b.docs.write("MEMORY.md", "beta bananas")
    assert a.docs.read("MEMORY.md").content == "alpha apples, again"
    assert b.docs.read("MEMORY.md").revision == 1
    assert [h.text for h in b.docs.search("apples")] == []
    assert [h.path for h in a.docs.search("apples")] == ["MEMORY.md"]
    assert b.docs.revisions("MEMORY.md") == []
    b.docs.delete("MEMORY.md")
    assert a.docs.read("MEMORY.md") is not None
    assert [r.revision for r in a.docs.revisions("MEMORY.md")] == [1]
    assert a.check().ok and b.check().ok


def test_nul_and_the_escape_marker_come_back_equal(open_pg: Any) -> None:
    db = open_pg()
    text = "a\x00b\n\n\ue000starts like an escaped value\\0\n"
    db.docs.write("notes/x.md", text)
    assert db.docs.read("notes/x.md").content == text
    db.docs.edit("notes/x.md", "\x00", "\x00\x00")
    assert db.docs.read_revision("notes/x.md", 1) == text
    assert db.docs.search("escaped")[0].text == "\ue000starts like an escaped value\\0"
    assert db.docs.list("\x00") == [] and db.docs.search("escaped", prefix="\x00") == []
    assert db.check().ok


def test_cjk_runs_are_found_as_phrases(open_pg: Any) -> None:
    db = open_pg()
    db.docs.write("notes/zh.md", "我喜欢跑步\n\n今天下雨")
    db.docs.write("notes/other.md", "跑 and 步 apart")
    hits = db.docs.search("跑步")
    assert [(h.path, h.start_line) for h in hits] == [("notes/zh.md", 1)]  # a phrase
    assert db.docs.search("下雨", prefix="notes/zh")[0].start_line == 3


def test_appends_from_several_servers_are_all_kept_in_order_of_revision(pg_dsn: str) -> None:
    """Four "servers" (backends of their own) append to one document at once: every line
    is there once, and every previous content is a kept revision (none lost, none twice)."""
    agent = new_agent_id()
    backends = [sp.PostgresBackend(pg_dsn, pool_size=2) for _ in range(4)]
    try:
        dbs = [b.open(agent, StoreConfig(doc_revisions=200)) for b in backends]
        errors: list[BaseException] = []

        def run(i: int) -> None:
            try:
                for j in range(10):
                    dbs[i].docs.append("MEMORY.md", f"line {i}-{j}")
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        doc = dbs[0].docs.read("MEMORY.md")
        lines = doc.content.split("\n")
        assert sorted(lines) == sorted(f"line {i}-{j}" for i in range(4) for j in range(10))
        assert doc.revision == 40
        revisions = dbs[0].docs.revisions("MEMORY.md")
        assert [r.revision for r in revisions] == list(range(39, 0, -1))
        assert dbs[0].docs.read_revision("MEMORY.md", 39) == "\n".join(lines[:-1])
        assert dbs[0].check().ok
    finally:
        for b in backends:
            b.close()


def test_import_dir_is_one_transaction(open_pg: Any, pg_dsn: str, tmp_path: Path) -> None:
    """MEMORY.md (new, path order first) is written, then notes/a.md's row is held by
    another client past the busy timeout: the import fails whole."""
    db = open_pg(busy_timeout_ms=200)
    db.docs.write("notes/a.md", "old")
    (tmp_path / "notes").mkdir()
    (tmp_path / "MEMORY.md").write_text("memory text")
    (tmp_path / "notes" / "a.md").write_text("new")
    with psycopg.connect(pg_dsn) as holder:
        holder.execute(
            "SELECT 1 FROM documents WHERE agent_id = %s AND path = 'notes/a.md' FOR UPDATE",
            (db.agent_id,),
        )
        with pytest.raises(StorageBusyError):
            db.docs.import_dir(tmp_path)
        holder.rollback()
    assert db.docs.read("MEMORY.md") is None
    assert db.docs.read("notes/a.md").content == "old"
    done = db.docs.import_dir(tmp_path)
    assert (done.created, done.updated) == (1, 1)
    assert db.docs.export_dir(tmp_path / "out") == 2
    assert (tmp_path / "out" / "notes" / "a.md").read_text() == "new"
    assert db.check().ok


def test_a_block_past_the_tsvector_limit_is_stored_whole(open_pg: Any) -> None:
    """SPEC 14 takes any content up to 10 MiB; PostgreSQL's tsvector holds 1 MiB of
    lexemes: the block is stored whole, found by its first words."""
    db = open_pg()
    many_words = " ".join(f"w{i}x" for i in range(200_000))  # ~1.4 MB of distinct words
    db.docs.write("notes/log.md", many_words)
    assert db.docs.read("notes/log.md").content == many_words
    assert [h.start_line for h in db.docs.search("w5x")] == [1]
    assert db.docs.search("w199999x") == []  # past the limit: not indexed
    db.docs.append("notes/log.md", "tail words")
    assert db.check().ok


# -- atomic() ---------------------------------------------------------------------------------


def test_a_block_uses_one_connection_so_a_pool_of_one_is_enough(pg_dsn: str) -> None:
    with sp.open(pg_dsn, new_agent_id(), pool_size=1) as db:
        with db.atomic():
            db.history.append("s", _user("apples"))
            db.facts.index(Fact(content="apples are red"))
            db.docs.write("MEMORY.md", "apples")
            with db.atomic():
                assert db.history.search("apples")[0].content == "apples"
                assert db.docs.search("apples")[0].path == "MEMORY.md"
                assert db.facts.search("apples red", mode="all")[0].content == "apples are red"
            assert db.stats()["documents"] == 1
        assert db.history.count("s") == 1  # the connection went back to the pool


def test_other_threads_read_the_last_committed_state_during_a_block(open_pg: Any) -> None:
    db = open_pg()
    seen: list[Any] = []
    with db.atomic():
        db.docs.write("MEMORY.md", "inside")
        db.facts.index(Fact(content="inside"))
        thread = threading.Thread(
            target=lambda: seen.extend([db.docs.read("MEMORY.md"), db.facts.count()])
        )
        thread.start()
        thread.join(30)
    assert seen == [None, 0]
    assert db.docs.read("MEMORY.md").content == "inside"


def test_a_block_killed_by_the_server_leaves_nothing_and_the_store_goes_on(
    open_pg: Any, pg_dsn: str
) -> None:
    db = open_pg()
    db.docs.write("MEMORY.md", "v1")
    with pytest.raises(StorageBusyError) as info, db.atomic():
        db.docs.write("MEMORY.md", "v2")
        db.history.append("s", _user("inside"))
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE pid != pg_backend_pid() AND state LIKE 'idle in transaction%'"
            )
        db.facts.index(Fact(content="after the kill"))
    assert not isinstance(info.value, psycopg.Error)
    doc = db.docs.read("MEMORY.md")
    assert (doc.content, doc.revision) == ("v1", 1)
    assert db.history.count("s") == 0 and db.facts.count() == 0
    assert db.history.append("s", _user("after")) == 1
    assert db.check().ok
    with psycopg.connect(pg_dsn, autocommit=True) as admin:  # no connection left in one
        left = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE pid != pg_backend_pid()"
            " AND state LIKE 'idle in transaction%'"
        ).fetchone()
    assert left == (0,)


def test_blocks_of_two_threads_do_not_mix(open_pg: Any) -> None:
    """Two threads' blocks on one agent's messages: the second waits for the first (both
    write the agent's message corpus row); each keeps its own rows, or none."""
    db = open_pg()
    errors: list[BaseException] = []

    def run(name: str, fail: bool) -> None:
        try:
            with db.atomic():
                db.history.append(name, _user(f"{name} one"))
                db.facts.index(Fact(content=f"{name} fact"))
                db.history.append(name, _user(f"{name} two"))
                if fail:
                    raise RuntimeError("undo " + name)
        except RuntimeError:
            pass
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n, n == "b")) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert [m.content for m in db.history.get_all("a")] == ["a one", "a two"]
    assert db.history.get_all("b") == []
    assert [f.content for f in db.facts.list()] == ["a fact"]


# -- maintenance ------------------------------------------------------------------------------


def test_stats_count_the_agents_rows_only(open_pg: Any) -> None:
    db, other = open_pg(), open_pg()
    other.facts.index(Fact(content="not mine"))
    other.docs.write("MEMORY.md", "not mine")
    db.history.append_many("s", [_user("a"), _user("b"), _user("c")])
    db.history.compact("s", keep_last=1, summary="ab")
    db.facts.index(Fact(content="mine"))
    db.docs.write("MEMORY.md", "mine")
    db.docs.write("notes/x.md", "mine too")
    stats = db.stats()
    assert stats["database_bytes"] > 0
    del stats["database_bytes"]
    assert stats == {
        "agent_id": db.agent_id,
        "schema_version": sp.migrations.latest_version(),
        "sessions": 1,
        "messages_active": 1,
        "messages_archived": 2,
        "facts": 1,
        "facts_without_vectors": 0,  # no embedder: nothing waits for embed_pending
        "messages_without_vectors": 0,
        "documents": 2,
    }


@pytest.mark.parametrize(
    ("damage", "found"),
    [
        (
            "UPDATE corpus_stats SET tokens = tokens + 1 WHERE agent_id = %s AND corpus = 3",
            "statistics of documents",
        ),
        (
            "UPDATE corpus_stats SET docs = docs - 1 WHERE agent_id = %s AND corpus = 1",
            "statistics of facts",
        ),
        ("UPDATE document_blocks SET end_line = end_line + 1 WHERE agent_id = %s", "blocks"),
        ("UPDATE documents SET size = size + 1 WHERE agent_id = %s", "size"),
        ("UPDATE sessions SET last_seq = 1 WHERE agent_id = %s", "counters"),
    ],
)
def test_check_finds_what_disagrees(open_pg: Any, pg_dsn: str, damage: str, found: str) -> None:
    db = open_pg()
    db.history.append_many("s", [_user("one"), _user("two")])
    db.facts.index(Fact(content="a fact"))
    db.docs.write("MEMORY.md", "a document\n\nwith two blocks")
    assert db.check().ok and db.check().problems == []
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(damage, (db.agent_id,))
    report = db.check()
    assert not report.ok
    assert any(found in p for p in report.problems), report.problems
    assert db.agent_id in report.path


def test_vacuum_and_maintain_delete_expired_facts(open_pg: Any) -> None:
    from datetime import datetime, timedelta, timezone

    db = open_pg()
    past = datetime.now(timezone.utc) - timedelta(days=1)
    db.facts.index(Fact(content="gone soon", expires_at=past))
    db.facts.index(Fact(content="stays"))
    assert db.maintain() == {"expired_facts": 1}
    db.facts.index(Fact(content="gone too", expires_at=past))
    db.vacuum()
    assert db.maintain() == {"expired_facts": 0}
    assert db.check().ok
    with db.atomic(), pytest.raises(SqlmemError, match="atomic"):
        db.vacuum()


# -- scopes (SPEC 8) --------------------------------------------------------------------------


def test_scopes_resolve_to_rows_apart_from_every_agent(pg_backend: Any) -> None:
    scope_id = new_agent_id()
    with MemoryFactory(None, backend=pg_backend) as factory:
        scope = factory.resolve_scope(scope_id)
        assert factory.resolve_scope(scope_id) is scope
        scope.facts.index(Fact(content="The user is vegetarian."))
        scope.docs.write("PROFILE.md", "vegetarian")
        agent = factory.resolve(scope_id)  # an agent of the same name: other rows
        assert agent is not None and agent is not scope
        assert agent.facts.count() == 0 and agent.docs.list() == []
        with pytest.raises(InvalidAgentIdError, match="scope_id"):
            factory.resolve_scope("a:b")
    # the scope's memory outlives the factory: rows of the shared database
    with MemoryFactory(None, backend=pg_backend) as factory:
        again = factory.resolve_scope(scope_id)
        assert [f.content for f in again.facts.search("vegetarian")] == ["The user is vegetarian."]
        assert again.docs.read("PROFILE.md").content == "vegetarian"


def test_scopes_use_the_default_store_settings(pg_backend: Any) -> None:
    default = AgentMemoryConfig(store=StoreConfig(history_search=False))
    with MemoryFactory(None, agents={}, default=default, backend=pg_backend) as factory:
        assert factory.resolve("anyone") is None
        assert factory.resolve_scope(new_agent_id()).config.history_search is False


def test_an_unknown_revision_is_not_found(open_pg: Any) -> None:
    db = open_pg(doc_revisions=1)
    for text in ("v1", "v2", "v3"):
        db.docs.write("MEMORY.md", text)
    with pytest.raises(DocumentNotFoundError, match="pruned"):
        db.docs.read_revision("MEMORY.md", 1)
    assert db.docs.read_revision("MEMORY.md", 2) == "v2"
    assert db.docs.restore("MEMORY.md", 2).revision == 4


# -- hostile input: always bound, and any query agrees with the twin --------------------------

MARK = "zq9mark"
HOSTILE = [
    f"'); DROP TABLE documents; -- {MARK}",
    f"{MARK}' OR '1'='1",
    f"{MARK} \\x00 \x00 nul",
    f"{MARK} $1 %s %(agent)s {{}}",
    f"{MARK}:* & | ! <-> '\\'",
    f"{MARK} 跑步 😀 \ue000",
]


def test_hostile_contents_queries_and_prefixes_are_bound(
    open_pg: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, neighbour = open_pg(), open_pg()
    seen: list[str] = []
    execute = psycopg.Cursor.execute

    def traced(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(query.decode() if isinstance(query, bytes) else str(query))
        return execute(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", traced)
    for i, value in enumerate(HOSTILE):
        path = f"notes/{i}.md"
        db.docs.write(path, value)
        db.docs.edit(path, MARK, MARK + MARK)
        db.docs.append(path, value)
        assert db.docs.read_revision(path, 1) == value
        assert db.docs.search(value, prefix="notes/")[0].path == path
        assert db.docs.search(value, prefix=value) == [] and db.docs.list(value) == []
        assert neighbour.docs.search(value) == [] and neighbour.docs.read(path) is None
    db.docs.append_daily(HOSTILE[0])
    assert MARK in db.docs.render_memory_context()
    with db.atomic():
        db.docs.restore("notes/0.md", 1)
    assert seen and not [q for q in seen if MARK in q]


_TEXTS = {
    "MEMORY.md": "The user runs every morning.\n\nLikes apples; dislikes pears.",
    "notes/a.md": "我喜欢跑步\n\nnaïve café — C++ and Python\n\n😀 emoji line",
    "notes/b.md": "running runner runs\nrun\n\n'quoted' \"double\" a&b a|b !x <-> y:*",
    "x/y.md": "apples apples apples\n\n\n42 0x1f -1",
}


@pytest.fixture
def corpus(open_pg: Any) -> tuple[Any, InMemoryDocumentStore]:
    """The same documents on PostgreSQL and in the twin (written once per test: hypothesis
    runs every example on them)."""
    db, twin = open_pg(), InMemoryDocumentStore()
    for path, text in _TEXTS.items():
        db.docs.write(path, text)
        twin.write(path, text)
    for word in ("apples", "跑步", "run", "a&b", "café"):  # what the examples compare is there
        assert len(db.docs.search(word)) == len(twin.search(word)) > 0
    return db, twin


@settings(max_examples=60, deadline=None)
@given(query=st.text(max_size=30), prefix=st.sampled_from(["", "notes/", "x"]))
def test_any_query_finds_what_the_twin_finds(
    corpus: tuple[Any, InMemoryDocumentStore], query: str, prefix: str
) -> None:
    db, twin = corpus
    try:
        expected = twin.search(query, top_k=50, prefix=prefix)
    except SqlmemError as exc:
        with pytest.raises(type(exc)):
            db.docs.search(query, top_k=50, prefix=prefix)
        return
    found = db.docs.search(query, top_k=50, prefix=prefix)
    key = lambda h: (round(h.score, 9), h.path, h.start_line, h.text)  # noqa: E731
    assert sorted(map(key, found)) == sorted(map(key, expected))
