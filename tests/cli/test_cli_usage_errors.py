"""A wrong command line exits with status 2 and a message naming the flag.

Regressions: `pack --budget 10 --max-budget 5` exited 1 with pydantic's wording and the
internal field names ("PackConfig.PackConfig: Value error, max_budget_tokens must be >=
soft_budget_tokens"); `pack --budget -1`, `embed --batch-size 0` and `mcp
--busy-timeout-ms -1` exited 1 naming `soft_budget_tokens`, `batch_size` and
`StoreConfig.busy_timeout_ms` instead of the flags the user typed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import sqlmem
from sqlmem import Fact
from sqlmem.cli import main

INTERNAL_WORDS = ("PackConfig", "StoreConfig", "_tokens", "batch_size", "Value error", "Input")


@pytest.fixture
def path(tmp_path: Path) -> str:
    file = tmp_path / "memory.db"
    with sqlmem.open(file) as db:
        db.facts.index(Fact(content="The user drinks green tea"))
    return str(file)


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["pack", "{path}", "tea", "--budget", "10", "--max-budget", "5"], "--max-budget"),
        (["pack", "{path}", "tea", "--budget", "-1"], "--budget"),
        (["pack", "{path}", "tea", "--max-budget", "x"], "--max-budget"),
        (["embed", "{path}", "--batch-size", "0"], "--batch-size"),
        (["embed", "{path}", "--batch-size", "-3"], "--batch-size"),
        (["mcp", "{path}", "--busy-timeout-ms", "-1"], "--busy-timeout-ms"),
        (["mcp", "{path}", "--busy-timeout-ms", "99999999999999"], "--busy-timeout-ms"),
        (["search", "{path}", "tea", "-k", "0"], "--top-k"),
        (["history", "{path}", "s", "-n", "0"], "-n"),
    ],
)
def test_a_bad_value_exits_2_naming_the_flag(
    capsys: pytest.CaptureFixture[str], path: str, argv: list[str], flag: str
) -> None:
    status = main([a.format(path=path) for a in argv])
    out, err = capsys.readouterr()
    assert status == 2, err
    assert out == ""
    assert err.startswith("sqlmem: error: ") and err.count("\n") == 1, err
    assert flag in err, err
    assert not [w for w in INTERNAL_WORDS if w in err], err


def test_the_budget_check_says_both_values(capsys: pytest.CaptureFixture[str], path: str) -> None:
    assert main(["pack", path, "tea", "--budget", "10", "--max-budget", "5"]) == 2
    err = capsys.readouterr().err
    assert "--max-budget (5) must be at least --budget (10)" in err


def test_good_values_still_run(capsys: pytest.CaptureFixture[str], path: str) -> None:
    assert main(["pack", path, "tea", "--budget", "5", "--max-budget", "5"]) == 0
    assert main(["pack", path, "tea", "--budget", "0", "--max-budget", "0"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    "argv",
    [
        ["pack", "{path}", "tea", "--budget", "10", "--max-budget", "5"],
        ["embed", "{path}", "--batch-size", "0"],
    ],
)
def test_a_usage_error_creates_no_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    """The flags are checked before any file is opened (as the troubleshooting page says):
    a mistyped command names no database into existence."""
    missing = tmp_path / "memory.db"
    assert main([a.format(path=missing) for a in argv]) == 2
    capsys.readouterr()
    assert sorted(tmp_path.iterdir()) == []
