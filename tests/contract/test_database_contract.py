"""One `Database` on every backend: `sqlmem.open(target)` for a path, ":memory:" and a
PostgreSQL URL gives an object with the same members and the same behaviour."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from targets import BACKENDS, Target, backend_target

import sqlmem
from sqlmem import Fact, InvalidArgumentError, Message, SqlmemError, StoreClosedError
from sqlmem.protocols import (
    CheckResult,
    Database,
    DocumentStore,
    FactStore,
    HistoryStore,
    has_layered_search,
    has_vector_search,
)

COUNTS = (
    "sessions",
    "messages_active",
    "messages_archived",
    "facts",
    "facts_without_vectors",
    "documents",
)


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    return backend_target(request, tmp_path)


@pytest.fixture
def db(target: Target) -> Iterator[Database]:
    opened = sqlmem.open(target.target, agent_id=target.agent_id)
    yield opened
    opened.close()


def test_every_target_opens_a_database_of_its_backend(target: Target, db: Database) -> None:
    assert isinstance(db, Database)
    assert isinstance(db.history, HistoryStore)
    assert isinstance(db.facts, FactStore)
    assert isinstance(db.docs, DocumentStore)
    expected = {"sqlite": "MemoryDB", "memory": "InMemoryDB", "postgres": "PostgresDB"}
    assert type(db).__name__ == expected[target.kind]


def test_stats_count_the_same_things_everywhere(db: Database) -> None:
    db.history.append_many("s", [Message(role="user", content=f"m{n}") for n in range(5)])
    db.history.compact("s", keep_last=2)
    db.facts.index(Fact(content="The user likes tea"))
    db.docs.write("MEMORY.md", "# Memory\n")
    stats = db.stats()
    assert {k: stats[k] for k in COUNTS} == {
        "sessions": 1,
        "messages_active": 2,
        "messages_archived": 3,
        "facts": 1,
        "facts_without_vectors": 0,  # no embedder: nothing waits for embed_pending
        "documents": 1,
    }


def test_stats_count_the_sessions_history_lists(db: Database) -> None:
    """A session whose every message was forgotten is no longer listed; stats agree."""
    db.history.append("gone", Message(role="user", content="forget me"))
    db.history.append("kept", Message(role="user", content="keep me"))
    db.history.append("summed", Message(role="user", content="summarised"))
    db.history.compact("summed", keep_last=0, summary="a summary")
    db.forget("msg:gone#1")
    assert db.history.sessions() == ["kept", "summed"]
    assert db.stats()["sessions"] == 2


def test_check_reports_a_healthy_database(db: Database) -> None:
    db.history.append("s", Message(role="user", content="hello"))
    db.facts.index(Fact(content="fact"))
    report = db.check()
    assert isinstance(report, CheckResult)
    assert report.ok and report.problems == []
    assert isinstance(report.path, str) and report.path


def test_maintain_expires_facts_everywhere(db: Database) -> None:
    from datetime import datetime, timedelta, timezone

    past = datetime.now(timezone.utc) - timedelta(days=1)
    db.facts.index(Fact(id="gone", content="expired", expires_at=past))
    db.facts.index(Fact(id="kept", content="kept"))
    done = db.maintain()
    assert isinstance(done, dict) and done["expired_facts"] == 1
    assert db.facts.get("gone") is None and db.facts.get("kept") is not None


def test_atomic_commits_together_or_not_at_all(db: Database) -> None:
    with db.atomic():
        db.history.append("s", Message(role="user", content="one"))
        db.facts.index(Fact(id="f1", content="one"))
    with pytest.raises(RuntimeError), db.atomic():
        db.history.append("s", Message(role="user", content="two"))
        db.facts.index(Fact(id="f2", content="two"))
        raise RuntimeError("undo")
    assert [m.content for m in db.history.get_all("s")] == ["one"]
    assert db.facts.get("f1") is not None and db.facts.get("f2") is None


def test_context_manager_closes(target: Target) -> None:
    with sqlmem.open(target.target, agent_id=target.agent_id) as db:
        assert not db.closed
    assert db.closed
    db.close()  # idempotent
    if target.kind != "memory":  # the twins keep working after close (0.2 behaviour)
        with pytest.raises(StoreClosedError):
            db.history.count("s")


def test_capabilities_are_asked_through_type_guards(target: Target, db: Database) -> None:
    assert has_layered_search(db.facts) is (target.kind == "sqlite")
    assert not has_vector_search(db.facts)  # no embedder


def test_a_postgres_url_needs_an_agent_id() -> None:
    with pytest.raises(InvalidArgumentError, match="agent_id"):
        sqlmem.open("postgresql://nobody@localhost/none")
    with pytest.raises(InvalidArgumentError, match="agent_id"):
        sqlmem.open("postgres://nobody@localhost/none")


def test_a_libpq_keyword_string_opens_postgres(pg_dsn: str) -> None:
    """psycopg's other way of naming a server ("host=... port=... dbname=...") opens the
    server too; it once created a SQLite file of that name beside the program."""
    assert "://" not in pg_dsn  # the test server's DSN is a keyword string
    with sqlmem.open(pg_dsn, agent_id="keyword-dsn") as db:
        assert type(db).__module__.startswith("sqlmem.postgres")
        db.history.append("s", Message(role="user", content="on the server"))
    with sqlmem.open(pg_dsn, agent_id="keyword-dsn") as db:
        assert [m.content for m in db.history.get_recent("s", 5)] == ["on the server"]


def test_a_libpq_keyword_string_without_agent_id_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidArgumentError, match="agent_id"):
        sqlmem.open("host=localhost port=5432 dbname=memory")
    assert list(tmp_path.iterdir()) == []


def test_a_file_name_with_an_equals_sign_is_still_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with sqlmem.open("run=1.db", agent_id="bot") as db:
        assert isinstance(db, sqlmem.MemoryDB)
    assert (tmp_path / "run=1.db").exists()


def test_other_sqlite_uris_stay_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError):
        sqlmem.open(f"file:{tmp_path}/x.db?mode=rwc")
    assert not (tmp_path / "x.db").exists()


def test_a_bad_agent_id_is_refused_for_every_target(tmp_path: Path) -> None:
    for target in (str(tmp_path / "a.db"), ":memory:", "postgresql://x@localhost/y"):
        with pytest.raises(sqlmem.InvalidAgentIdError):
            sqlmem.open(target, agent_id="../escape")
    assert not (tmp_path / "a.db").exists()


def test_a_path_with_an_agent_id_is_still_the_file(tmp_path: Path) -> None:
    with sqlmem.open(tmp_path / "a.db", agent_id="bot") as db:
        assert isinstance(db, sqlmem.MemoryDB) and db.path == tmp_path / "a.db"


def test_a_missing_postgres_extra_names_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [
        m for m in sys.modules if m == "sqlmem.postgres" or m.startswith("sqlmem.postgres.")
    ]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # what an absent package looks like
    with pytest.raises(SqlmemError, match=r"pip install 'sqlmem\[postgres\]'"):
        sqlmem.open("postgresql://x@localhost/y", agent_id="bot")


class _Minimal:
    """A third party's database with exactly the protocol's members (over the twins)."""

    def __init__(self) -> None:
        self._inner = sqlmem.open(":memory:")
        self.history, self.facts, self.docs = (
            self._inner.history,
            self._inner.facts,
            self._inner.docs,
        )

    def atomic(self) -> Any:
        return self._inner.atomic()

    def stats(self) -> dict[str, Any]:
        return self._inner.stats()

    def check(self) -> Any:
        return self._inner.check()

    def maintain(self) -> dict[str, Any]:
        return self._inner.maintain()

    def close(self) -> None:
        self._inner.close()

    def __enter__(self) -> _Minimal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def test_a_database_with_just_the_protocols_members_is_one() -> None:
    import asyncio
    import json

    import sqlmem.aio

    db = _Minimal()
    assert isinstance(db, Database)
    tools = sqlmem.MemoryTools(db)
    assert "id" in json.loads(tools.call("save_memory", {"content": "The user likes tea"}))

    async def main() -> None:
        adb = sqlmem.aio.AsyncMemoryDB(db)
        assert not adb.closed  # it cannot say: taken as open
        assert [f.content for f in await adb.facts.search("tea")] == ["The user likes tea"]
        await adb.aclose()

    asyncio.run(main())
