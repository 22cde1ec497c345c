"""Two processes remember, supersede and delete facts of the same keys at once (SQLite file
and PostgreSQL agent): whatever the interleaving, no key is left with two live facts, and
every chain stays whole (each fact links to the next by id and time)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmem

KEYS = ("user.city", "user.job")

CHILD = """
import json, sys
from datetime import datetime, timedelta, timezone
import sqlmem
from sqlmem import Fact, FactNotFoundError
target, agent, name, ops = sys.argv[1], sys.argv[2] or None, sys.argv[3], json.loads(sys.argv[4])
t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
with sqlmem.open(target, agent_id=agent) as db:
    for n, (op, key, day) in enumerate(ops):
        text = f"{name} value {n} of {key}"
        when = None if day is None else t0 + timedelta(days=day)
        chain = db.facts.history(key=key)
        live = [f.id for f in chain if f.superseded_by is None]
        if op == "remember":
            db.facts.remember(Fact(content=text, key=key, valid_from=when))
        elif op == "supersede" and live:
            try:
                db.facts.supersede(live[-1], Fact(content=text, valid_from=when))
            except FactNotFoundError:
                pass  # deleted by the other process meanwhile
        elif op == "delete" and live:
            db.facts.delete_many([live[-1]])
"""

OPS = st.lists(
    st.tuples(
        st.sampled_from(["remember", "remember", "supersede", "delete"]),
        st.sampled_from(KEYS),
        st.none() | st.integers(0, 5),
    ),
    min_size=1,
    max_size=12,
)


def _run_pair(target: str, agent: str, first: list[Any], second: list[Any]) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", CHILD, target, agent, name, json.dumps(ops)])
        for name, ops in (("a", first), ("b", second))
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]


def _check_chains(db: Any) -> None:
    for key in KEYS:
        chain = db.facts.history(key=key)
        live = [f for f in chain if f.superseded_by is None]
        assert len(live) <= 1, [f.content for f in live]
        assert len(chain) == 0 or live == [chain[-1]]
        for before, after in itertools.pairwise(chain):
            assert before.superseded_by == after.id
            assert before.valid_to == after.valid_from
            assert before.valid_from <= after.valid_from
        current = [f for f in db.facts.list(limit=100) if f.key == key]
        assert [f.id for f in current] == [f.id for f in live]


_SETTINGS = settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@_SETTINGS
@given(first=OPS, second=OPS)
def test_two_processes_on_one_file_never_leave_two_live_facts(
    tmp_path_factory: pytest.TempPathFactory, first: list[Any], second: list[Any]
) -> None:
    path = tmp_path_factory.mktemp("chains") / "memory.db"
    sqlmem.open(path).close()  # migrated once, before the race
    _run_pair(str(path), "", first, second)
    with sqlmem.open(path) as db:
        _check_chains(db)


@_SETTINGS
@given(first=OPS, second=OPS)
def test_two_processes_on_one_agent_never_leave_two_live_facts(
    pg_dsn: str, first: list[Any], second: list[Any]
) -> None:
    from pgserver import new_agent_id
    from targets import as_url

    agent, url = new_agent_id(), as_url(pg_dsn)
    with sqlmem.open(url, agent_id=agent) as db:
        assert type(db).__name__ == "PostgresDB"
    _run_pair(url, agent, first, second)
    with sqlmem.open(url, agent_id=agent) as db:
        _check_chains(db)
