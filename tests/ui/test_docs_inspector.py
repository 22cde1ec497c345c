"""Every screenshot docs/inspector.md shows exists (its examples run in tests/test_docs.py)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "inspector.md"


def test_every_screenshot_shown_exists():
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", PAGE.read_text(encoding="utf-8"))
    assert len(images) == 7
    for image in images:
        assert (PAGE.parent / image).stat().st_size > 10_000, image
