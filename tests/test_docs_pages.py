"""The documentation pages of the opener and the async API run as written: every python
block, top to bottom in one namespace, and what they print is what their `# ->` comments
say."""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["docs/opening.md", "docs/async.md", "docs/facts-that-change.md", "docs/scaling.md"]


@pytest.mark.parametrize("page", PAGES)
def test_page_runs_and_prints_what_it_says(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("SQLMEM_POSTGRES_URL", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    text = (ROOT / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert blocks
    namespace: dict[str, object] = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for index, block in enumerate(blocks):
            exec(compile(block, f"{page} block {index + 1}", "exec"), namespace)
    said = [m.strip() for m in re.findall(r"# -> (.*)$", "\n".join(blocks), flags=re.M)]
    lines = printed.getvalue().splitlines()
    assert set(lines) == set(said)
