"""docs/recall.md: every python block runs as-is, top to bottom, and prints what its
`# ->` comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "recall.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.DOTALL)


def _expected(block: str) -> list[str]:
    return [line.split("# -> ", 1)[1] for line in block.splitlines() if "# -> " in line]


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_the_pages_examples_run_and_print_what_they_say(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(BLOCKS[index], f"recall.md example {index + 1}", "exec"), {})
    assert out.getvalue().splitlines() == _expected(BLOCKS[index])


def test_the_page_has_examples() -> None:
    assert len(BLOCKS) >= 2
