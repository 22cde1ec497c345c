"""docs/adapters.md's Python examples run as they are, top to bottom, and print what their
`# ->` comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

pytest.importorskip("agents")
pytest.importorskip("langgraph.store.base")
pytest.importorskip("langchain_core")

DOC = Path(__file__).resolve().parents[2] / "docs" / "adapters.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def _expected(block: str) -> list[str]:
    """The printed lines the block's comments state: `# -> text` after a print, and the
    comment lines that follow it (a multi-line output)."""
    return [m.group(1) for m in re.finditer(r"# -> ?(.*)$", block, flags=re.MULTILINE)]


def test_the_examples_run_and_print_what_they_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    assert len(BLOCKS) >= 4
    namespace: dict[str, object] = {}
    for index, block in enumerate(BLOCKS):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block, f"docs/adapters.md example {index + 1}", "exec"), namespace)
        lines = [line.rstrip() for line in printed.getvalue().splitlines()]
        assert lines == [line.rstrip() for line in _expected(block)], f"example {index + 1}"
