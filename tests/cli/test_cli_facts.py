"""The command line and facts that change: `search --as-of`, `fact-history`, `forget`."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem import Fact, Message
from sqlmem.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _file(tmp_path: Path) -> tuple[Path, str, str]:
    path = tmp_path / "memory.db"
    with sqlmem.open(path) as db:
        db.history.append("chat", Message(role="user", content="I moved to Berlin"))
        old = db.facts.remember(
            Fact(
                content="The user lives in Paris.",
                key="user.city",
                valid_from=datetime(2020, 1, 1, tzinfo=timezone.utc),
            )
        )
        new = db.facts.remember(
            Fact(
                content="The user lives in Berlin.",
                key="user.city",
                valid_from=datetime(2024, 1, 1, tzinfo=timezone.utc),
                references=["msg:chat#1"],
            )
        )
    return path, old, new


def test_search_as_of(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, old, new = _file(tmp_path)
    code, out, _ = run(capsys, "--json", "search", str(path), "lives", "--as-of", "2021-05-01")
    assert code == 0
    assert [r["id"] for r in json.loads(out)["results"]] == [old]
    code, out, _ = run(capsys, "--json", "search", str(path), "lives")
    found: list[dict[str, Any]] = json.loads(out)["results"]
    assert [(r["id"], r["key"]) for r in found] == [(new, "user.city")]
    code, _, err = run(capsys, "search", str(path), "lives", "--as-of", "someday")
    assert code != 0 and "ISO 8601" in err


def test_fact_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, old, new = _file(tmp_path)
    code, out, _ = run(capsys, "--json", "fact-history", str(path), "--key", "user.city")
    assert code == 0
    history = json.loads(out)["history"]
    assert [h["id"] for h in history] == [old, new]
    assert history[0]["superseded_by"] == new
    code, out, _ = run(capsys, "fact-history", str(path), "--id", old)
    assert code == 0 and "Paris" in out and "now" in out


def test_forget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, old, _ = _file(tmp_path)
    code, out, _ = run(capsys, "--json", "forget", str(path), "chat")
    assert code == 0
    assert json.loads(out) == {
        "source": "chat",
        "messages": 1,
        "facts": 1,
        "documents": 0,
        "revisions": 0,
    }
    with sqlmem.open(path) as db:
        assert [f.id for f in db.facts.search("lives")] == [old]
