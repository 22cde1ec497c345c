"""The PostgreSQL hot paths' round trips (issue 21, performance): an append is one
statement in autocommit (statistics, seqs and rows in data-modifying CTEs), a fact upsert
one pipeline in one transaction, and what that must keep: seqs unique and gap-free, the
BM25 statistics exact, and the agent's locks taken in one order, with appends, pops,
purges and fact upserts of one agent running at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from pgserver import new_agent_id

import sqlmem.postgres as sp
from sqlmem.records import Fact, Message


@contextmanager
def _traced(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts what the stores ask of psycopg: statements, transactions, pipelines."""
    seen = {"statements": 0, "transactions": 0, "pipelines": 0}

    def counting(name: str, original: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if name != "statements" or args[1] != "":  # "" is the pool's liveness check
                seen[name] += 1
            return original(*args, **kwargs)

        return wrapper

    with monkeypatch.context() as patch:
        patch.setattr(psycopg.Cursor, "execute", counting("statements", psycopg.Cursor.execute))
        patch.setattr(
            psycopg.Connection,
            "transaction",
            counting("transactions", psycopg.Connection.transaction),
        )
        patch.setattr(
            psycopg.Connection, "pipeline", counting("pipelines", psycopg.Connection.pipeline)
        )
        yield seen


def test_an_append_is_one_statement_and_no_transaction(
    open_pg: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = open_pg()
    db.history.append("s", Message(role="user", content="warm"))
    with _traced(monkeypatch) as seen:
        assert db.history.append("s", Message(role="user", content="one")) == 2
    assert seen == {"statements": 1, "transactions": 0, "pipelines": 0}
    with _traced(monkeypatch) as seen:
        got = db.history.append_many("s", [Message(role="user", content=f"m{i}") for i in range(5)])
    assert got == [3, 4, 5, 6, 7]
    assert seen == {"statements": 1, "transactions": 0, "pipelines": 0}
    assert [m.seq for m in db.history.get_all("s")] == list(range(1, 8))


def test_with_max_history_len_the_append_and_its_compaction_are_one_transaction(
    open_pg: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = open_pg(max_history_len=3)
    for i in range(3):
        db.history.append("s", Message(role="user", content=f"m{i}"))
    with _traced(monkeypatch) as seen:
        db.history.append("s", Message(role="user", content="m3"))
    assert seen["transactions"] == 1 and seen["pipelines"] == 0
    assert [m.content for m in db.history.get_recent("s", 10)] == ["m1", "m2", "m3"]


def test_a_fact_upsert_is_one_pipeline_in_one_transaction(
    open_pg: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = open_pg()
    db.facts.index(Fact(id="a", content="alpha words"))
    with _traced(monkeypatch) as seen:
        db.facts.index(Fact(id="a", content="alpha words rewritten here"))
    assert seen == {"statements": 3, "transactions": 1, "pipelines": 1}
    assert [f.content for f in db.facts.search("rewritten")] == ["alpha words rewritten here"]


def _stats(dsn: str, agent: str) -> dict[int, tuple[int, int]]:
    with psycopg.connect(dsn) as admin:
        kept = admin.execute(
            "SELECT corpus, docs, tokens FROM corpus_stats WHERE agent_id = %s", (agent,)
        ).fetchall()
        messages = admin.execute(
            "SELECT count(*), coalesce(sum(doc_len), 0) FROM messages WHERE agent_id = %s",
            (agent,),
        ).fetchone()
        facts = admin.execute(
            "SELECT count(*), coalesce(sum(doc_len), 0) FROM facts WHERE agent_id = %s",
            (agent,),
        ).fetchone()
    assert messages is not None and facts is not None
    stored = {1: (int(facts[0]), int(facts[1])), 2: (int(messages[0]), int(messages[1]))}
    assert {c: (int(d), int(t)) for c, d, t in kept} == stored  # exact, not drifted
    return stored


def test_concurrent_writers_of_one_agent_keep_seqs_and_statistics_exact(pg_dsn: str) -> None:
    """Appends (taking the statistics row, then the session's, in one statement), pops and
    purges (the same order, in several statements) and fact upserts of the same ids, all
    at once in one agent: no deadlock, no busy error, seqs unique, statistics exact."""
    agent = new_agent_id()
    errors: list[BaseException] = []
    popped: list[Any] = []
    with sp.open(pg_dsn, agent, pool_size=8) as db:

        def appender(n: int) -> None:
            for i in range(40):
                if i % 3:
                    db.history.append("shared", Message(role="user", content=f"t{n} m{i}"))
                else:
                    db.history.append_many(
                        "shared",
                        [Message(role="user", content=f"t{n} m{i} {w}") for w in ("a", "b c")],
                    )
                db.history.append(f"own{n}", Message(role="user", content=f"mine {i} " * i))

        def popper() -> None:
            for i in range(30):
                popped.append(db.history.pop("shared"))  # None while the session is empty
                if i % 10 == 9:
                    db.history.purge("own0")

        def indexer(n: int) -> None:
            for i in range(40):
                db.facts.index(Fact(id=f"f{i % 5}", content=f"fact {n} " + "word " * (i % 7)))

        def guarded(fn: Any, *args: Any) -> None:
            try:
                fn(*args)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=guarded, args=(appender, n)) for n in range(3)]
        threads += [threading.Thread(target=guarded, args=(popper,))]
        threads += [threading.Thread(target=guarded, args=(indexer, n)) for n in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        seqs = [m.seq for m in db.history.get_all("shared")]
        gone = [m.seq for m in popped if m is not None]
        appended = 3 * (26 + 2 * 14)
        assert len(seqs) == len(set(seqs)) == appended - len(gone)
        assert sorted(seqs + gone) == list(range(1, appended + 1))  # unique, gap-free
        assert db.history.count("shared") == len(seqs)
        assert db.facts.count() == 5
    stats = _stats(pg_dsn, agent)
    assert stats[1][0] == 5
