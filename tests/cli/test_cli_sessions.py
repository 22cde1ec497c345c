"""`sqlmem sessions PATH [--json]` (SPEC 10, 0.2): every session with its active and
archived counts and last activity (its newest message's created_at), as text and JSON;
bad input is one stderr line; the file is only read (tests/cli/test_cli_readonly.py runs
it with the other read-only commands)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem import Message
from sqlmem.cli import main

T1 = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
T2 = datetime(2025, 6, 7, 8, 9, 10, tzinfo=timezone.utc)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """Three sessions: one compacted, one that popped its newest messages, one with only
    a summary; and one emptied by pops (not listed)."""
    path = tmp_path / "memory.db"
    with sqlmem.open(path) as db:
        h = db.history
        h.append_many(
            "chat:1", [Message(role="user", content=str(i), created_at=T1) for i in range(5)]
        )
        h.compact("chat:1", 2, summary="earlier")
        h.append_many("chat:2", [Message(role="user", content="a", created_at=T1),
                                 Message(role="user", content="b", created_at=T2),
                                 Message(role="user", content="c", created_at=T1)])  # fmt: skip
        h.pop("chat:2")  # the newest message is now "b", at T2
        h.set_summary("notes", "only a summary")
        h.append("gone", Message(role="user", content="x"))
        h.pop("gone")
    return path


def test_sessions_json(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "sessions", str(path), "--json")
    assert status == 0 and err == ""
    doc: dict[str, Any] = json.loads(out)
    assert doc == {
        "sessions": [
            {"session_id": "chat:1", "active": 2, "archived": 3,
             "last_activity": "2025-01-02T03:04:05.678+00:00"},
            {"session_id": "chat:2", "active": 2, "archived": 0,
             "last_activity": "2025-06-07T08:09:10.000+00:00"},
            {"session_id": "notes", "active": 0, "archived": 0, "last_activity": None},
        ]
    }  # fmt: skip
    with sqlmem.open(path) as db:  # the same sessions the store lists
        assert [s["session_id"] for s in doc["sessions"]] == db.history.sessions()


def test_sessions_text(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "sessions", str(path))
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["SESSION", "ACTIVE", "ARCHIVED", "LAST", "ACTIVITY"]
    assert lines[1].split() == ["chat:1", "2", "3", "2025-01-02", "03:04:05", "UTC"]
    assert lines[2].split() == ["chat:2", "2", "0", "2025-06-07", "08:09:10", "UTC"]
    assert lines[3].split() == ["notes", "0", "0", "-"]
    assert lines[4] == "3 sessions"


def test_no_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with sqlmem.open(tmp_path / "empty.db"):
        pass
    assert run(capsys, "sessions", str(tmp_path / "empty.db")) == (0, "no sessions\n", "")
    status, out, _ = run(capsys, "sessions", str(tmp_path / "empty.db"), "--json")
    assert status == 0 and json.loads(out) == {"sessions": []}


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["sessions", "{tmp}/missing.db"], 1, "no such file"),
        (["sessions", "{tmp}"], 1, "is a directory"),
        (["sessions", "{tmp}/text.db"], 1, "not a valid SQLite database"),
        (["sessions"], 2, "required: PATH"),
        (["sessions", "{tmp}/text.db", "extra"], 2, "unrecognized arguments"),
    ],
)
def test_bad_input_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], status: int, message: str
) -> None:
    (tmp_path / "text.db").write_bytes(b"not a database\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    got, out, err = run(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert got == status and out == ""
    assert err.startswith("sqlmem: error: ") and err.count("\n") == 1 and message in err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing created
