"""`sqlmem demo` run again leaves today's note as the first run left it.

Regression: each run appended the demo's line to today's note once more (the rest of the
demo was already idempotent: same facts, same MEMORY.md revision, same session).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

import sqlmem
from sqlmem.cli import main

LINE = "Met a user who just moved to Lisbon with their dog."


def _demo(capsys: pytest.CaptureFixture[str], folder: Path) -> str:
    assert main(["demo", str(folder), "--json"]) == 0
    return str(json.loads(capsys.readouterr().out)["database"])


def test_running_the_demo_three_times_writes_todays_line_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    today = f"memory/{datetime.now(timezone.utc).date().isoformat()}.md"
    database = _demo(capsys, tmp_path / "d")
    with sqlmem.open(database) as db:
        first = db.docs.read(today)
    assert first is not None and first.content.count(LINE) == 1
    for _ in range(2):
        assert _demo(capsys, tmp_path / "d") == database
    with sqlmem.open(database) as db:
        again = db.docs.read(today)
        assert again is not None
        assert again.content == first.content and again.revision == first.revision
        db.docs.append_daily("The user asked about trains.")  # the user's own lines stay
    _demo(capsys, tmp_path / "d")
    with sqlmem.open(database) as db:
        last = db.docs.read(today)
    assert last is not None and last.content.count(LINE) == 1
    assert last.content.endswith("The user asked about trains.")
