"""Issue 17: a SIGKILL at any moment of consolidation leaves HISTORY.md, MEMORY.md, the
session summary and the archive consistent: every entry matches what was archived with it,
nothing is archived without its entry, nothing is entered twice."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import sqlmem

CHILD = Path(__file__).with_name("consolidation_child.py")
KILLS = 12


def _check(path: Path) -> int:
    with sqlmem.open(path) as db:
        every = db.history.get_all("s", include_archived=True)
        active = {m.seq for m in db.history.get_all("s")}
        archived = [m for m in every if m.seq not in active]
        history = db.docs.read("HISTORY.md")
        lines = history.content.splitlines() if history is not None else []
        entries = [re.search(r"upto (m\d+)$", line).group(1) for line in lines]  # type: ignore[union-attr]
        assert len(entries) == len(set(entries))  # nothing entered twice
        if archived:
            assert entries, "messages archived without an entry"
            newest = archived[-1].content
            assert entries[-1] == newest  # the last entry folded exactly what was archived
            assert db.history.get_summary("s") == lines[-1]
            memory = db.docs.read("MEMORY.md")
            assert memory is not None and memory.content == f"# Memory\n{newest}"
        else:
            assert not entries and db.history.get_summary("s") == ""
        assert [m.content for m in every] == [f"m{i}" for i in range(len(every))]
        assert db.check().ok
        return len(archived)


def test_sigkill_during_consolidation_keeps_workspace_and_archive_consistent(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.db"
    rng = random.Random(17)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    archived = 0
    for _ in range(KILLS):
        with subprocess.Popen(
            [sys.executable, str(CHILD), str(path)], stdout=subprocess.PIPE, env=env
        ) as child:
            assert child.stdout is not None and child.stdout.readline() == b"ready\n"
            time.sleep(rng.uniform(0.01, 0.25))
            child.send_signal(signal.SIGKILL)
            child.wait(30)
        archived = _check(path)
    assert archived > 0  # consolidation did run between the kills


def test_sigkill_aimed_at_the_consolidation_transaction(tmp_path: Path) -> None:
    """The kill lands within a few ms after the model answered: while the HISTORY.md
    entry, MEMORY.md and the archive are being written in their one transaction."""
    path = tmp_path / "memory.db"
    rng = random.Random(1717)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    archived = 0
    for _ in range(KILLS):
        with subprocess.Popen(
            [sys.executable, str(CHILD), str(path)], stdout=subprocess.PIPE, env=env
        ) as child:
            assert child.stdout is not None and child.stdout.readline() == b"ready\n"
            for _ in range(rng.randint(1, 3)):  # the n-th consolidation of this child
                assert child.stdout.readline() == b"model\n"
            time.sleep(rng.uniform(0, 0.004))  # where in the write to die, not a wait
            child.send_signal(signal.SIGKILL)
            child.wait(30)
        archived = _check(path)
    assert archived > 0
