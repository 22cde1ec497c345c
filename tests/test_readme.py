"""The README's Python examples run, so they never rot; its commands match CI's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_example_runs(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twice, as a user pasting it again would: the examples make their own folders."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    code = compile(BLOCKS[index], f"README.md example {index + 1}", "exec")
    for _ in range(2):
        exec(code, {})


def test_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 2


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    (command,) = re.findall(r"^python3 -m venv .*pytest.*$", README, flags=re.MULTILINE)
    assert command in ci
