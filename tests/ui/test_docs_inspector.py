"""docs/inspector.md runs as written: its python blocks, top to bottom in one namespace,
print what their `# ->` comments say, and every screenshot it shows exists."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "inspector.md"


def test_the_python_blocks_run_and_print_what_they_say():
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert blocks
    namespace: dict[str, object] = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for index, block in enumerate(blocks):
            exec(compile(block, f"inspector.md block {index + 1}", "exec"), namespace)
    said = [m.strip() for m in re.findall(r"# -> (.*)$", "\n".join(blocks), flags=re.M)]
    assert printed.getvalue().splitlines() == said
    db = namespace["db"]
    db.close()  # type: ignore[attr-defined]


def test_every_screenshot_shown_exists():
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", PAGE.read_text(encoding="utf-8"))
    assert len(images) == 7
    for image in images:
        assert (PAGE.parent / image).stat().st_size > 10_000, image
