"""The Google ADK page runs as written: every python block, top to bottom in one
namespace, and what it prints is what its `# ->` comments say. It runs in the ADK venv
(.ci/run): ADK pins packages older than the test environment's; every other page,
Pydantic AI's included, runs in tests/test_docs.py."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("close_the_loop_run_sync_leaves")


@pytest.mark.parametrize(("page", "framework"), [("docs/adk.md", "google.adk")])
def test_page_runs_and_prints_what_it_says(page: str, framework: str) -> None:
    pytest.importorskip(framework)
    text = (ROOT / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert blocks
    namespace: dict[str, object] = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for index, block in enumerate(blocks):
            exec(compile(block, f"{page} block {index + 1}", "exec"), namespace)
    said = [m.strip() for m in re.findall(r"# -> (.*)$", "\n".join(blocks), flags=re.M)]
    assert printed.getvalue().splitlines() == said
