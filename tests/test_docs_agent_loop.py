"""The Python examples of docs/agent-loop.md run as written, and print what they say."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "agent-loop.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE, flags=re.DOTALL)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_agent_loop_example_runs_and_prints_what_it_says(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    exec(compile(BLOCKS[index], f"docs/agent-loop.md example {index + 1}", "exec"), {})
    printed = capsys.readouterr().out
    stated = re.findall(r"print\(.*\)  # -> (.*)$", BLOCKS[index], flags=re.MULTILINE)
    assert printed == "".join(s.replace("\\n", "\n") + "\n" for s in stated)


def test_the_page_has_examples() -> None:
    assert len(BLOCKS) >= 3
