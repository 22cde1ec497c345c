"""The primary of a real cluster SIGKILLed under 4 processes x 4 threads of writers.

pg_auto_failover promotes the synchronous secondary; the writers' multi-host DSN
(`target_session_attrs=read-write`) finds it by itself. Afterwards, through the public API:
every acknowledged write (append, remember, document edit) is stored exactly once (an
append at the seq it was given), every write refused with a plain `StorageBusyError` is
absent, a `CommitUnknownError` one is there at most once, each session's seqs are unique
and gap-free, every thread wrote again within seconds, and nothing but sqlmem errors
reached the callers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pgcluster import AutoFailoverCluster
from pgserver import new_agent_id

import sqlmem
import sqlmem.postgres as sp
from sqlmem import Message

PROCESSES, THREADS = 4, 4
WRITER = Path(__file__).with_name("cluster_writer.py")


def test_both_dsn_forms_reach_the_primary(cluster: AutoFailoverCluster) -> None:
    agent = new_agent_id()
    for dsn in (cluster.dsn(), cluster.dsn(key_value=True)):
        with sp.open(dsn, agent) as db:
            db.history.append("s", Message(role="user", content=dsn[:10]))
    with sp.open(cluster.dsn(), agent) as db:
        assert [m.seq for m in db.history.get_all("s")] == [1, 2]


def _all_facts(db: sp.PostgresDB) -> list[sqlmem.Fact]:
    found, offset = [], 0
    while page := db.facts.list(limit=500, offset=offset):
        found += page
        offset += len(page)
    return found


def _check_once(kind: str, stored: Counter[str], outcomes: list[list[Any]]) -> int:
    """Acknowledged: exactly once; refused: absent; unknown: at most once. Returns how
    many acknowledged writes were checked."""
    mine = [o for o in outcomes if o[0] == kind]
    for _, key, outcome, *_ in mine:
        if outcome == "ok":
            assert stored[key] == 1, (kind, key, stored[key])
        elif outcome == "busy":
            assert stored[key] == 0, (kind, key, "refused yet stored")
        else:
            assert outcome == "unknown" and stored[key] <= 1, (kind, key, outcome)
    assert set(stored) <= {key for _, key, *_ in mine}, f"{kind}: stored, never written"
    return sum(1 for o in mine if o[2] == "ok")


def _verify(db: sp.PostgresDB, outcomes: list[list[Any]]) -> int:
    checked = 0
    appends = [o for o in outcomes if o[0] == "append"]
    stored_messages: Counter[str] = Counter()
    for session in {o[5] for o in appends}:
        messages = db.history.get_all(session)
        seqs = [m.seq for m in messages]
        assert seqs == list(range(1, len(seqs) + 1)), session  # unique and gap-free
        by_seq = {m.seq: m.content for m in messages}
        for o in appends:
            if o[2] == "ok" and o[5] == session:
                assert by_seq.get(o[7]) == o[1], ("acknowledged seq holds another", o)
        stored_messages.update(m.content for m in messages)
    checked += _check_once("append", stored_messages, outcomes)

    facts = _all_facts(db)
    stored_facts = Counter(f.content.removeprefix("fact ") for f in facts)
    checked += _check_once("remember", stored_facts, outcomes)
    ids = {f.content.removeprefix("fact "): f.id for f in facts}
    for kind, key, outcome, *_, value in outcomes:
        if kind == "remember" and outcome == "ok":
            assert ids[key] == value  # the id remember() returned

    stored_lines: Counter[str] = Counter()
    for doc in {o[6] for o in outcomes}:
        document = db.docs.read(doc)
        assert document is not None and document.content.endswith("END\n"), doc
        stored_lines.update(line for line in document.content.splitlines() if line != "END")
    checked += _check_once("edit", stored_lines, outcomes)
    return checked


@pytest.fixture
def writers(cluster: AutoFailoverCluster, tmp_path: Path) -> Iterator[dict[str, Any]]:
    agent, stop = new_agent_id(), tmp_path / "stop"
    children = [
        subprocess.Popen(
            [sys.executable, str(WRITER), cluster.dsn(), agent, f"p{n}", str(THREADS), str(stop)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(PROCESSES)
    ]
    try:
        yield {"agent": agent, "stop": stop, "children": children}
    finally:
        stop.touch()
        for child in children:
            if child.poll() is None:
                try:
                    child.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.communicate()


def _wait_for_writes(db: sp.PostgresDB, at_least: int) -> None:
    deadline = time.monotonic() + 120
    for n in range(PROCESSES):
        for t in range(THREADS):
            while db.history.count(f"p{n}-t{t}") < at_least:
                assert time.monotonic() < deadline, "the writers never got going"
                time.sleep(0.05)


def test_primary_killed_under_writers_loses_no_acknowledged_write(
    cluster: AutoFailoverCluster, writers: dict[str, Any], record_property: Any
) -> None:
    dsn = cluster.dsn()
    primary = cluster.role("primary")
    with psycopg.connect(cluster.node_dsn(primary)) as conn:
        row = conn.execute("SHOW synchronous_standby_names").fetchone()
    assert row is not None and row[0], "the secondary must be synchronous"

    with sp.open(dsn, writers["agent"], pool_size=1) as watcher:
        _wait_for_writes(watcher, 3)
    killed_at = time.time()
    cluster.kill(primary)
    writable = cluster.wait_for_writable(120)
    time.sleep(6)  # the writers go on against the new primary
    writers["stop"].touch()
    reports = []
    for child in writers["children"]:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err[-3000:]
        reports.append(json.loads(out))
    outcomes = [o for r in reports for o in r["outcomes"]]

    strange = [o for o in outcomes if o[2] not in ("ok", "busy", "unknown")]
    assert not strange, strange[:5]  # no psycopg (or any other) exception escaped
    recovered = []
    for n in range(PROCESSES):
        for t in range(THREADS):
            after = [o[4] for o in outcomes if o[1].startswith(f"p{n}-t{t}-") and o[2] == "ok"]
            later = [end for end in after if end > killed_at]
            assert later, f"thread p{n}-t{t} never wrote again after the kill"
            recovered.append(min(later) - killed_at)
    assert max(recovered) < 60

    with sp.open(dsn, writers["agent"]) as db:
        checked = _verify(db, outcomes)
    counts = Counter(o[2] for o in outcomes)
    summary = {
        "acknowledged_writes_checked": checked,
        "outcomes": dict(counts),
        "writable_after_s": round(writable, 2),
        "every_thread_writing_again_within_s": round(max(recovered), 2),
    }
    record_property("failover", summary)
    print("failover:", json.dumps(summary))
    assert checked > 100
    cluster.rejoin(primary)  # leave the cluster whole for whoever runs next
