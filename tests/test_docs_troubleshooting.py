"""docs/troubleshooting.md: its Python examples run as they are, top to bottom, and print
what their `# ->` comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "troubleshooting.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.DOTALL)


def _expected(block: str) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(r"# -> (.*)$", block, flags=re.MULTILINE)]


def test_the_page_has_examples() -> None:
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs_and_prints_what_it_says(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    block = BLOCKS[index]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block, f"troubleshooting.md example {index + 1}", "exec"), {})
    capsys.readouterr()
    expected = _expected(block)
    if expected:
        assert printed.getvalue().split("\n")[: len(expected)] == expected
    assert not (tmp_path / "memory.db").exists()  # the command-line example creates nothing
