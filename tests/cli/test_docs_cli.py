"""`sqlmem docs PATH ACTION` (SPEC 10 and 14): every action, --json, --help, one-line errors."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem.cli import main

ACTIONS = ["list", "show", "write", "edit", "history", "restore", "search", "export", "import"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    status, out, err = run(capsys, *argv, "--json")
    assert status == 0, err
    return json.loads(out)


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    with sqlmem.open(path) as db:
        db.docs.write("MEMORY.md", "# Memory\n\nThe dog is called Rex.\n")
        db.docs.write("MEMORY.md", "# Memory\n\nThe dog is called Rex.\nLikes tea.\n")
        db.docs.append_daily("ran 5 km")
    return path


def test_list_show_history_search(memory: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = str(memory)
    listing = run_json(capsys, "docs", p, "list")
    assert listing["documents"][0]["path"] == "MEMORY.md"
    assert listing["documents"][0]["revision"] == 2 and listing["documents"][0]["enabled"]
    assert run_json(capsys, "docs", p, "list", "--prefix", "memory/")["documents"][0][
        "path"
    ].startswith("memory/")
    shown = run_json(capsys, "docs", p, "show", "MEMORY.md")
    assert shown["content"].endswith("Likes tea.\n") and shown["revision"] == 2
    status, out, _ = run(capsys, "docs", p, "show", "MEMORY.md")
    assert status == 0 and out == "# Memory\n\nThe dog is called Rex.\nLikes tea.\n"
    old = run_json(capsys, "docs", p, "show", "MEMORY.md", "--revision", "1")
    assert old["content"] == "# Memory\n\nThe dog is called Rex.\n"
    history = run_json(capsys, "docs", p, "history", "MEMORY.md")
    assert history["current"]["revision"] == 2
    assert [r["revision"] for r in history["revisions"]] == [1]
    hits = run_json(capsys, "docs", p, "search", "dog")["results"]
    assert [(h["path"], h["start_line"], h["end_line"]) for h in hits] == [("MEMORY.md", 3, 4)]
    status, out, _ = run(capsys, "docs", p, "search", "dog")
    assert status == 0 and "MEMORY.md:3-4" in out


def test_write_edit_restore(
    memory: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    p = str(memory)
    local = tmp_path / "PROFILE.md"
    local.write_text("name: Ana\n", "utf-8")
    done = run_json(capsys, "docs", p, "write", "PROFILE.md", "--from", str(local))
    assert (done["created"], done["revision"], done["bytes"]) == (True, 1, 10)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("name: Ana ü\n".encode())))
    done = run_json(capsys, "docs", p, "write", "PROFILE.md")
    assert (done["overwritten"], done["revision"]) == (True, 2)
    edited = run_json(capsys, "docs", p, "edit", "PROFILE.md", "Ana", "Bea")
    assert (edited["replacements"], edited["revision"]) == (1, 3)
    restored = run_json(capsys, "docs", p, "restore", "PROFILE.md", "1")
    assert (restored["overwritten"], restored["revision"]) == (True, 4)
    with sqlmem.open(memory) as db:
        assert db.docs.read("PROFILE.md").content == "name: Ana\n"  # type: ignore[union-attr]
    status, out, _ = run(capsys, "docs", p, "edit", "MEMORY.md", "e", "E", "--all")
    assert status == 0 and "replacements" in out


def test_export_and_import_a_folder(memory: Path, tmp_path: Path, capsys: Any) -> None:
    folder = tmp_path / "workspace"
    assert run_json(capsys, "docs", str(memory), "export", str(folder))["written"] == 2
    (folder / "MEMORY.md").write_text("edited in my editor\n", "utf-8")
    (folder / "notes.txt").write_text("skipped", "utf-8")
    done = run_json(capsys, "docs", str(memory), "import", str(folder))
    assert (done["created"], done["updated"], done["unchanged"], done["skipped"]) == (0, 1, 1, 1)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["show", "NOPE.md"], "no document at 'NOPE.md'"),
        (["show", "../x.md"], "document path '../x.md' is not allowed"),
        (["show", "MEMORY.md", "--revision", "9"], "no revision 9"),
        (["history", "NOPE.md"], "no document"),
        (["edit", "MEMORY.md", "e", "x"], "found 6 times"),
        (["edit", "MEMORY.md", "zzz", "x"], "found 0 times"),
        (["edit", "NOPE.md", "a", "b"], "no document"),
        (["restore", "MEMORY.md", "7"], "no revision 7"),
        (["write", "MEMORY.md", "--from", "/nonexistent/file.md"], "cannot read"),
        (["write", "a\\b.md", "--from", "/dev/null"], "not allowed"),
        (["show", "MEMORY.md", "--revision", "0"], "must be 1 or more"),
        (["frobnicate"], "invalid choice"),
        ([], "required: ACTION"),
    ],
)
def test_errors_are_one_line(
    memory: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    status, out, err = run(capsys, "docs", str(memory), *argv)
    assert status in (1, 2) and out == ""
    assert err.count("\n") == 1 and err.startswith("sqlmem: error: ") and message in err, err


def test_read_only_actions_on_a_missing_file_create_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.db"
    for argv in (["list"], ["show", "MEMORY.md"], ["search", "x"], ["export", "out"]):
        status, _, err = run(capsys, "docs", str(missing), *argv)
        assert status == 1 and "no such file" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("action", ACTIONS)
def test_every_action_has_help_with_an_example(
    action: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(capsys, "docs", "memory.db", action, "--help")
    assert status == 0 and "examples:" in out and f"sqlmem docs memory.db {action}" in out
    assert "--json" in out


def test_no_traceback_in_a_real_process(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sqlmem", "docs", str(tmp_path / "m.db"), "write", "/etc/x.md"],
        input=b"x",
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.decode().startswith("sqlmem: error: document path '/etc/x.md'")
    assert b"Traceback" not in proc.stderr
