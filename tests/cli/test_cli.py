"""The `sqlmem` command line, run in-process through `main(argv)` (plus one real process
for the entry point): every command's text and JSON output, and every bad input ending in
one stderr line and a non-zero status, never a traceback."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem import Fact, Message
from sqlmem.cli import main
from sqlmem.cli.output import Progress
from sqlmem.sqlite.core.migrations import latest_version

REPO = Path(__file__).resolve().parents[2]
COMMANDS = [
    "demo", "info", "check", "migrate", "search", "history", "sessions", "export", "import",
    "maintain", "vacuum", "embed", "pack",
]  # fmt: skip


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    status, out, err = run(capsys, *argv, "--json")
    assert status == 0, err
    return json.loads(out)


def assert_one_error_line(err: str) -> None:
    assert err.startswith("sqlmem: error: ")
    assert err.count("\n") == 1 and err.endswith("\n")
    assert "Traceback" not in err


@pytest.fixture
def demo_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A database made by `sqlmem demo`: 7 messages (5 archived), 3 facts."""
    status, _, err = run(capsys, "demo", str(tmp_path / "demo"))
    assert status == 0, err
    return tmp_path / "demo" / "agents" / "demo-agent" / "memory.db"


# -- demo -------------------------------------------------------------------------------------


def test_demo_prints_what_it_did(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "demo", str(tmp_path / "d"))
    assert status == 0 and err == ""
    assert str(tmp_path / "d") in out
    assert "get_weather" in out and "The user's dog is called Rex." in out
    assert "用户喜欢周日早上跑步" in out
    assert "## Relevant Memory" in out


def test_demo_json_and_running_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = run_json(capsys, "demo", str(tmp_path / "d"))
    second = run_json(capsys, "demo", str(tmp_path / "d"))
    for doc in (first, second):
        assert len(doc["messages"]) == 7 and doc["facts_total"] == 4
        compaction = doc["compaction"]
        assert (compaction["archived"], compaction["active"]) == (5, 2)
        # Consolidator: the HISTORY.md entry is the summary, dated by the last archived turn
        assert compaction["summary"].endswith("suggested a walk.")
        assert compaction["history_md"] == compaction["summary"]  # one line, every run
        assert [m["archived"] for m in doc["messages"]] == [True] * 5 + [False] * 2
        roles = [m["role"] for m in doc["messages"]]
        assert roles == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
        assert doc["messages"][2]["tool_calls"][0]["name"] == "get_weather"
        assert doc["messages"][3]["tool_call_id"] == "call_1"
        dog, running, weather = doc["searches"]
        assert "Rex" in dog["results"][0]["content"] and dog["query"] == "what's my dog's name?"
        assert running["results"][0]["content"] == "用户喜欢周日早上跑步"
        assert weather["results"], "history search must reach archived messages"
    assert len(first["new_facts"]) == 4
    assert second["new_facts"] == []  # idempotent: the facts were already remembered
    for doc in (first, second):  # the 0.2 part: workspace documents and the memory pack
        work = doc["workspace"]
        assert work["memory_md_revision"] == 1  # the same MEMORY.md again: no new revision
        assert work["memory_context"].startswith("## Long-term Memory\n# Memory\n")
        assert work["bm25_results"] == []  # no word in common with the answer
        assert work["semantic_search"] == "hybrid"  # the test extra installs wordllama
        assert work["pack"].startswith("# Memory\n\n## Semantic\n- The user is vegetarian.\n")
    assert [f["id"] for f in first["extracted_facts"]] == [
        f["id"] for f in second["extracted_facts"]
    ]
    with sqlmem.open(first["database"]) as db:
        assert db.history.sessions() == ["demo:lisbon"]


def test_python_dash_m_runs_the_demo(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "sqlmem", "demo", str(tmp_path / "d"), "--json"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["facts_total"] == 4


def test_demo_hints_run_from_a_shell_without_the_venv_on_path(tmp_path: Path) -> None:
    """issue 23 (demo hints): "Look inside" printed bare `sqlmem ...`, which is not on PATH
    after the README quick start (`.venv/bin/sqlmem`); each hint must run as printed."""
    env = {
        **os.environ,
        "PATH": os.defpath,  # no virtual environment's bin folder
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    data_dir = tmp_path / "a folder"  # the hints must quote what they print
    done = subprocess.run(
        [sys.executable, "-m", "sqlmem", "demo", str(data_dir)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=True,
    )  # fmt: skip
    hints = done.stdout.split("Look inside:\n", 1)[1].splitlines()
    assert len(hints) == 3
    for hint in hints:
        ran = subprocess.run(
            hint, shell=True, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
        )
        assert ran.returncode == 0, (hint, ran.stderr)
        assert ran.stdout


def test_demo_refuses_a_file_as_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f").write_text("x")
    status, _, err = run(capsys, "demo", str(tmp_path / "f"))
    assert status == 1
    assert_one_error_line(err)


# -- help -------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_has_an_example(command: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--help"] if command is None else [command, "--help"]
    status, out, _ = run(capsys, *argv)
    assert status == 0
    assert "examples:" in out and "sqlmem " in out.split("examples:")[1]
    if command is not None:
        assert "--json" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "--version")
    assert status == 0 and out == f"sqlmem {sqlmem.__version__}\n"


# -- inspection commands ----------------------------------------------------------------------


def test_info(demo_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "info", str(demo_db))
    latest = latest_version()
    assert status == 0 and f"schema version  {latest} (latest {latest})" in out
    doc = run_json(capsys, "info", str(demo_db))
    assert doc["schema_version"] == doc["latest_version"] == latest
    assert (doc["messages_active"], doc["messages_archived"], doc["facts"]) == (2, 5, 4)
    assert run_json(capsys, "--json", "info", str(demo_db)) == doc  # before the command too


def test_check(demo_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "check", str(demo_db))
    assert status == 0 and out.startswith("ok: ")
    assert run_json(capsys, "check", str(demo_db)) == {
        "path": str(demo_db), "ok": True, "problems": []
    }  # fmt: skip


def test_check_fails_on_a_damaged_index(demo_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conn = sqlite3.connect(demo_db)
    pk, content = conn.execute("SELECT pk, content FROM facts LIMIT 1").fetchone()
    # Remove a fact from the full-text index behind the triggers' back.
    conn.execute(
        "INSERT INTO facts_fts(facts_fts, rowid, content) VALUES ('delete', ?, ?)", (pk, content)
    )
    conn.commit()
    conn.close()
    status, out, err = run(capsys, "check", str(demo_db))
    assert status == 1 and out.startswith("DAMAGED: ") and err == ""
    status, out, _ = run(capsys, "check", str(demo_db), "--json")
    assert status == 1 and json.loads(out)["ok"] is False


def test_migrate_creates_then_does_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "new" / "memory.db"
    doc = run_json(capsys, "migrate", str(path))
    assert doc == {
        "path": str(path), "created": True, "schema_version_before": 0,
        "schema_version": latest_version(), "applied": latest_version(),
    }  # fmt: skip
    status, out, _ = run(capsys, "migrate", str(path))
    assert status == 0 and f"already at the latest schema version {latest_version()}" in out


def test_search_facts_and_history(demo_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "search", str(demo_db), "what's my dog's name?")
    assert status == 0 and out.startswith(" 1. [") and "Rex" in out.splitlines()[0]
    doc = run_json(capsys, "search", str(demo_db), "跑步", "-k", "1")
    assert [r["content"] for r in doc["results"]] == ["用户喜欢周日早上跑步"]
    doc = run_json(capsys, "search", str(demo_db), "dog Lisbon", "--mode", "all")
    assert doc["results"] == []
    doc = run_json(capsys, "search", str(demo_db), "dog OR Lisbon", "--mode", "raw")
    assert len(doc["results"]) == 2
    doc = run_json(capsys, "search", str(demo_db), "sunny", "--history", "--session", "demo:lisbon")
    assert doc["kind"] == "messages" and doc["results"][0]["session_id"] == "demo:lisbon"
    status, out, _ = run(capsys, "search", str(demo_db), "zebra")
    assert status == 0 and out == "no facts match 'zebra'\n"


def test_history(demo_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "history", str(demo_db), "demo:lisbon", "-n", "1")
    assert status == 0 and out.splitlines()[1].startswith("summary: ")
    assert out.splitlines()[-1].startswith("#7 ")
    doc = run_json(capsys, "history", str(demo_db), "demo:lisbon", "--all")
    assert [m["seq"] for m in doc["messages"]] == list(range(1, 8))
    assert [m["archived"] for m in doc["messages"]] == [True] * 5 + [False] * 2
    assert doc["active"] == 2 and doc["summary"]
    status, out, _ = run(capsys, "history", str(demo_db), "nobody")
    assert status == 0 and out == "session 'nobody': no messages\n"


# -- export and import ------------------------------------------------------------------------


def test_export_import_round_trip(
    demo_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, exported, err = run(capsys, "export", str(demo_db))
    assert status == 0 and err == ""
    lines = exported.splitlines()
    assert json.loads(lines[0])["format"] == "sqlmem-export"
    # header, 7 messages, 1 summary, the 6 vectors of the messages with text (one is a
    # tool call alone), 4 facts, their 4 vectors, and the documents: HISTORY.md, MEMORY.md
    # and today's note
    assert len(lines) == 1 + 7 + 1 + 6 + 4 + 4 + 3

    dump = tmp_path / "dump.jsonl"
    doc = run_json(capsys, "export", str(demo_db), "-o", str(dump))
    assert doc["records"] == 25 and dump.read_text("utf-8").splitlines()[1:] == lines[1:]

    target = tmp_path / "restored" / "memory.db"
    doc = run_json(capsys, "import", str(target), str(dump))
    assert (doc["messages"], doc["summaries"], doc["facts"]) == (7, 1, 4)
    assert (doc["vectors"], doc["documents"]) == (4, 3)
    doc = run_json(capsys, "import", str(target), str(dump))
    assert (doc["messages"], doc["summaries"], doc["facts"]) == (0, 0, 0)
    assert doc["messages_skipped"] == 7 and doc["facts_skipped"] == 4
    status, again, _ = run(capsys, "export", str(target))
    assert again.splitlines()[1:] == lines[1:]
    status, out, _ = run(capsys, "import", str(target), str(dump))
    assert status == 0 and "0 added, 7 already there" in out


def test_export_refuses_to_overwrite_the_database(
    demo_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = demo_db.read_bytes()
    status, _, err = run(capsys, "export", str(demo_db), "-o", str(demo_db))
    assert status == 1
    assert_one_error_line(err)
    assert demo_db.read_bytes() == before


def test_progress_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress("imported", enabled=True)
    progress(10_000)
    progress.finish()
    Progress("imported", enabled=False)(10_000)
    assert capsys.readouterr().err == "\rsqlmem: imported 10,000 records\n"


# -- bad input: one line, a status, nothing created ----------------------------------------


def _newer_schema(path: Path) -> None:
    with sqlmem.open(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


HEADER = b'{"format": "sqlmem-export", "format_version": 1}\n'


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["info", "{tmp}/missing.db"], 1, "no such file"),
        (["check", "{tmp}/missing.db"], 1, "no such file"),
        (["search", "{tmp}/missing.db", "x"], 1, "no such file"),
        (["history", "{tmp}/missing.db", "s"], 1, "no such file"),
        (["export", "{tmp}/missing.db"], 1, "no such file"),
        (["info", "{tmp}"], 1, "is a directory"),
        (["info", "{tmp}/text.db"], 1, "not a valid SQLite database"),
        (["search", "{tmp}/empty.db", "x"], 1, "not a sqlmem database"),
        (["info", "{tmp}/newer.db"], 1, "newer than this sqlmem knows"),
        (["migrate", "{tmp}/newer.db"], 1, "newer than this sqlmem knows"),
        (["search", "{tmp}/ok.db", '"open', "--mode", "raw"], 1, "invalid FTS5 query"),
        (["import", "{tmp}/ok.db", "{tmp}/missing.jsonl"], 1, "No such file or directory"),
        (["import", "{tmp}/ok.db", "{tmp}/bad-line.jsonl"], 1, "line 3: not valid JSON"),
        (["import", "{tmp}/ok.db", "{tmp}/bad-record.jsonl"], 1, "line 2: record.role"),
        (["import", "{tmp}/new.db", "{tmp}/newer.jsonl"], 1, "format_version 4 is newer"),
        (["import", "{tmp}/new.db", "{tmp}/text.db"], 1, "line 1: not valid JSON"),
        ([], 2, "a command is required"),
        (["frobnicate"], 2, "invalid choice"),
        (["info"], 2, "required: PATH"),
        (["info", "{tmp}/ok.db", "--bogus"], 2, "unrecognized arguments"),
        (["search", "{tmp}/ok.db", "x", "-k", "0"], 2, "must be 1 or more"),
        (["search", "{tmp}/ok.db", "x", "-k", "many"], 2, "not a whole number"),
        (["search", "{tmp}/ok.db", "x", "--history", "--mode", "all"], 2, "--mode applies"),
        (["search", "{tmp}/ok.db", "x", "--session", "s"], 2, "--session applies"),
        (["history", "{tmp}/ok.db", "s", "-n", "3", "--all"], 2, "not allowed with"),
        (["history", "{tmp}/ok.db", "x" * 600], 1, "session_id must be 1-512"),
        (["info", ":memory:"], 1, "not supported"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_a_status(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    status: int,
    message: str,
) -> None:
    _write(tmp_path / "text.db", b"hello, I am not a database\n")
    _write(tmp_path / "empty.db", b"")
    _newer_schema(tmp_path / "newer.db")
    with sqlmem.open(tmp_path / "ok.db"):
        pass
    _write(tmp_path / "bad-line.jsonl", HEADER + b"\n{oops\n")
    _write(tmp_path / "bad-record.jsonl", HEADER + b'{"type": "message", "session_id": "s", '
           b'"seq": 1, "role": "robot"}\n')  # fmt: skip
    _write(tmp_path / "newer.jsonl", b'{"format": "sqlmem-export", "format_version": 4}\n')
    before = sorted(p.name for p in tmp_path.iterdir())

    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    for extra in ([], ["--json"]):
        got, out, err = run(capsys, *args, *extra)
        assert got == status, err
        assert_one_error_line(err)
        assert message in err
        assert out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing created
    assert (tmp_path / "empty.db").read_bytes() == b""  # not turned into a database


def test_an_older_schema_is_described_not_upgraded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    with sqlmem.open(path):
        pass
    current = latest_version()
    monkeypatch.setattr("sqlmem.cli.commands.latest_version", lambda: current + 1)
    monkeypatch.setattr("sqlmem.cli.opening.latest_version", lambda: current + 1)
    doc = run_json(capsys, "info", str(path))
    assert doc["needs_migration"] is True and doc["schema_version"] == current
    status, _, err = run(capsys, "search", str(path), "x")
    assert status == 1 and "run 'sqlmem migrate" in err


def test_an_unexpected_error_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: object) -> int:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("sqlmem.cli.commands.run_info", broken)
    status, _, err = run(capsys, "info", str(tmp_path / "x.db"))
    assert status == 1
    assert_one_error_line(err)
    assert "RuntimeError: boom second line" in err


def test_a_surrogate_in_an_import_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with sqlmem.open(tmp_path / "ok.db") as db:
        db.facts.index(Fact(id="f", content="kept"))
        db.history.append("s", Message(role="user", content="kept"))
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(HEADER + b'{"type": "fact", "id": "g", "content": "\\udc80"}\n')
    status, _, err = run(capsys, "import", str(tmp_path / "ok.db"), str(bad))
    assert status == 1 and "line 2" in err
    assert_one_error_line(err)
