"""The README's Python examples run, so they never rot; its commands match CI's."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
SCRATCH = Path("/tmp/sqlmem-readme")  # the examples' own paths


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_example_runs(index: int) -> None:
    shutil.rmtree(SCRATCH, ignore_errors=True)
    try:
        exec(compile(BLOCKS[index], f"README.md example {index + 1}", "exec"), {})
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)


def test_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 2


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    (command,) = re.findall(r"^python3 -m venv .*pytest.*$", README, flags=re.MULTILINE)
    assert command in ci
