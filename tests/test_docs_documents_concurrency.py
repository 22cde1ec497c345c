"""docs/documents-concurrency.md: its Python blocks run top to bottom as one program, and
the outputs it states in `# ->` comments are the ones printed."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "documents-concurrency.md"


def test_the_page_runs_and_prints_what_it_says() -> None:
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) >= 4
    printed = io.StringIO()
    namespace: dict[str, object] = {}
    with contextlib.redirect_stdout(printed):
        for index, block in enumerate(blocks):
            exec(compile(block, f"documents-concurrency.md block {index + 1}", "exec"), namespace)
    stated = [
        line.split("# -> ", 1)[1]
        for block in blocks
        for line in block.splitlines()
        if "# -> " in line
    ]
    assert printed.getvalue().splitlines() == stated
