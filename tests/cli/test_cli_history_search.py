"""`sqlmem search --history --mode vector|hybrid --embedder wordllama` and `sqlmem embed`
filling messages too: output, JSON, and bad input as one stderr line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem import Message
from sqlmem.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    status, out, err = run(capsys, *argv, "--json")
    assert status == 0, err
    return json.loads(out)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """A file whose messages were stored without an embedder (no vectors yet)."""
    p = tmp_path / "memory.db"
    with sqlmem.open(p) as db:
        db.history.append_many(
            "chat",
            [
                Message(role="user", content="The user is vegetarian."),
                Message(role="user", content="The user lives in Berlin."),
                Message(role="user", content="Deploy with make"),
            ],
        )
        db.history.append("other", Message(role="user", content="The user is vegetarian."))
    return p


def test_embed_fills_messages_then_history_searches_by_meaning(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    data = run_json(capsys, "embed", str(path), "--embedder", "wordllama")
    assert (data["embedded"], data["left"]) == (0, 0)
    assert (data["messages_embedded"], data["messages_left"]) == (4, 0)
    status, out, _ = run(capsys, "embed", str(path))
    assert status == 0 and out.splitlines()[1] == "embedded 0 messages; 0 without"
    for mode in ("vector", "hybrid"):
        found = run_json(
            capsys, "search", str(path), "what do I eat?", "--history", "--mode", mode,
            "--embedder", "wordllama", "--session", "chat", "-k", "1",
        )  # fmt: skip
        assert found["kind"] == "messages"
        assert [(r["session_id"], r["seq"]) for r in found["results"]] == [("chat", 1)]
    status, out, _ = run(
        capsys, "search", str(path), "what do I eat?", "--history", "--mode", "vector",
        "--embedder", "wordllama", "-k", "2",
    )  # fmt: skip
    assert status == 0 and out.count("The user is vegetarian.") == 2
    empty = run_json(capsys, "search", str(path), "what do I eat?", "--history")
    assert empty["results"] == []  # BM25 alone finds no shared word


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--history", "--mode", "vector"], "--embedder"),
        (["--history", "--mode", "all"], "facts only"),
        (["--history", "--mode", "raw"], "facts only"),
        (["--history", "--embedder", "wordllama"], "--embedder"),
    ],
)
def test_bad_history_modes_are_one_line(
    capsys: pytest.CaptureFixture[str], path: Path, argv: list[str], message: str
) -> None:
    status, out, err = run(capsys, "search", str(path), "x", *argv)
    assert status == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) <= 2
