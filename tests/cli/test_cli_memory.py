"""`sqlmem maintain`, `vacuum`, `embed`, `pack` and `search --mode vector|hybrid` (SPEC 10,
0.2): output, JSON, and bad input as one stderr line."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem import Fact
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
    p = tmp_path / "memory.db"
    with sqlmem.open(p) as db:
        db.facts.index(Fact(content="The user is vegetarian.", layer="semantic"))
        db.facts.index(Fact(content="Deploy with make release", layer="procedural"))
        db.facts.index(
            Fact(
                content="old news",
                expires_at=datetime.now(timezone.utc) - timedelta(seconds=1),
            )
        )
    return p


def test_maintain_expires_merges_and_checkpoints(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    data = run_json(capsys, "maintain", str(path))
    assert data["expired_facts"] == 1
    assert set(data["optimized"]) == {"messages_fts", "facts_fts", "document_blocks_fts"}
    status, out, _ = run(capsys, "maintain", str(path))
    assert status == 0 and out.startswith("expired 0 facts")


def test_vacuum(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    # Space to reclaim: on a fresh file with nothing deleted, the rebuilt schema table may
    # pack one page less tightly than the one the migrations built, so "never larger" is
    # not what vacuum promises; giving back deleted facts' pages is.
    with sqlmem.open(path) as db:
        gone = [db.facts.index(Fact(content=f"scratch {i} " + "x" * 2000)) for i in range(60)]
        for fact_id in gone:
            db.facts.delete(fact_id)
    data = run_json(capsys, "vacuum", str(path))
    assert data["bytes_after"] < data["bytes_before"] - 60 * 2000
    with sqlmem.open(path) as db:
        assert db.facts.count() == 2


def test_embed_then_search_by_meaning(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    data = run_json(capsys, "embed", str(path), "--embedder", "wordllama")
    assert (data["embedded"], data["left"]) == (2, 0)
    assert data["model"] == "wordllama/l2_supercat-256"
    assert run_json(capsys, "embed", str(path))["embedded"] == 0
    found = run_json(
        capsys, "search", str(path), "what do I eat?", "--mode", "vector", "--embedder",
        "wordllama", "-k", "1",
    )  # fmt: skip
    assert [r["content"] for r in found["results"]] == ["The user is vegetarian."]
    assert run_json(capsys, "search", str(path), "what do I eat?")["results"] == []


def test_pack_prints_the_pack_and_its_diagnostics(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    status, out, _ = run(capsys, "pack", str(path), "")
    assert status == 0
    assert out.startswith("# Memory\n\n## Semantic\n- The user is vegetarian.\n")
    assert "## Procedural\n- Deploy with make release" in out and "tokens" in out
    data = run_json(capsys, "pack", str(path), "vegetarian")
    assert data["text"] == "# Memory\n\n## Semantic\n- The user is vegetarian.\n"
    assert data["diagnostics"]["selected"]["semantic"] == 1
    assert data["items"][0]["layer"] == "semantic"


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "PATH", "x", "--mode", "vector"],  # no embedder
        ["search", "PATH", "x", "--embedder", "wordllama"],  # embedder without its mode
        ["embed", "PATH", "--embedder", "nope"],
        ["pack", "PATH"],
        ["maintain", "MISSING"],
        ["vacuum", "MISSING"],
        ["pack", "MISSING", "x"],
    ],
)
def test_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], path: Path, argv: list[str]
) -> None:
    argv = [str(path) if a == "PATH" else str(path.parent / "nope.db") if a == "MISSING" else a
            for a in argv]  # fmt: skip
    status, out, err = run(capsys, *argv)
    assert status != 0 and out == ""
    assert err.startswith("sqlmem: error: ") and err.count("\n") == 1
    assert not (path.parent / "nope.db").exists()
