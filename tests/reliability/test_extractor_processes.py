"""The workspace extractor's one-run-at-a-time and cooldown hold across processes (their
state is a lease in the file), and a process killed during its run does not block the
others past its lease.

Regression: the gate and the cooldown lived in each process, so three processes with a
300 s cooldown made three model calls.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import sqlmem
from sqlmem import Message, WorkspaceExtractor
from sqlmem.sqlite.core.migrations import latest_version, load_migrations

CHILD = Path(__file__).with_name("extractor_child.py")


def _conversation(db: sqlmem.MemoryDB) -> None:
    for role, text in [
        ("user", "I want to plan a trip to Oslo"),
        ("assistant", "Sure!"),
        ("user", "In winter please"),
        ("assistant", "Noted"),
    ]:
        db.history.append("s", Message(role=role, content=text))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _start(path: Path, calls: Path, start: float, cooldown: float, lease: float, *more: str):  # type: ignore[no-untyped-def]
    return subprocess.Popen(
        [
            sys.executable,
            str(CHILD),
            str(path),
            str(calls),
            str(start),
            str(cooldown),
            str(lease),
            *more,
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )


def test_three_processes_with_a_cooldown_make_one_model_call(tmp_path: Path) -> None:
    path, calls = tmp_path / "memory.db", tmp_path / "calls.txt"
    with sqlmem.open(path) as db:
        _conversation(db)
    start = time.time() + 3.0  # all three imported and opened by then
    children = [_start(path, calls, start, 300, 600) for _ in range(3)]
    reasons = []
    for child in children:
        out, _ = child.communicate(timeout=120)
        assert child.returncode == 0
        reasons.append(out.strip())
    assert calls.read_text().count("call") == 1, reasons
    assert sorted(reasons)[-1] == "nothing new" and reasons.count("nothing new") == 1
    assert all(r in ("busy", "cooldown", "nothing new") for r in reasons), reasons
    # and later, one after another: the cooldown is the file's, not the process's
    later = _start(path, calls, 0, 300, 600)
    out, _ = later.communicate(timeout=120)
    assert out.strip() == "cooldown" and calls.read_text().count("call") == 1


def test_a_killed_run_blocks_others_only_until_its_lease_expires(tmp_path: Path) -> None:
    path, calls = tmp_path / "memory.db", tmp_path / "calls.txt"
    with sqlmem.open(path) as db:
        _conversation(db)
    holder = _start(path, calls, 0, 0, 3, "hang")
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "model"  # it holds the lease now
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
        killed_at = time.monotonic()
        answer = json.dumps({"should_update": False, "reason": "ran"})
        with sqlmem.open(path) as db:
            extractor = WorkspaceExtractor(db, lambda prompt: answer, cooldown_seconds=0)
            first = extractor.run("s")
            if time.monotonic() - killed_at < 2.5:  # well within the 3 s lease
                assert first.reason == "busy"
            deadline = time.monotonic() + 30
            outcome = first
            while outcome.reason == "busy" and time.monotonic() < deadline:
                time.sleep(0.2)
                outcome = extractor.run("s")
            assert outcome.ran and outcome.reason == "ran"
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.communicate(timeout=30)  # reaps it and closes its pipe


def test_a_file_from_before_the_leases_is_upgraded_in_place(tmp_path: Path) -> None:
    # Built as the previous release left it (every migration before the leases' one), then
    # opened by this sqlmem: the table is added and the extractor's gate works there.
    plan = load_migrations()
    before = next(m.version for m in plan if m.name.endswith("run_leases")) - 1
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " sha256 TEXT NOT NULL, applied_at INTEGER NOT NULL)"
    )
    for migration in plan[:before]:
        conn.executescript(migration.sql.replace("{tokenizer}", sqlmem.StoreConfig().tokenizer))
        conn.execute(
            "INSERT INTO schema_version VALUES (?, ?, ?, 0)",
            (migration.version, migration.name, migration.sha256),
        )
        conn.execute(f"PRAGMA user_version = {migration.version}")
    conn.commit()
    conn.close()
    with sqlmem.open(path) as db:
        assert db.stats()["schema_version"] == latest_version()
        _conversation(db)
        answer = json.dumps({"should_update": False, "reason": "ran"})
        first = WorkspaceExtractor(db, lambda p: answer, cooldown_seconds=300).run("s")
        assert first.ran
    with sqlmem.open(path) as db:  # another opening: the cooldown was kept in the file
        again = WorkspaceExtractor(db, lambda p: answer, cooldown_seconds=300).run("s")
        assert again.reason == "cooldown"
