"""The inspector's templates and assets ship inside the wheel (no CDN, no build step)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from sqlmem.ui.app import STATIC_FILES

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_carries_the_templates_and_assets(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(tmp_path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in STATIC_FILES:
        assert f"sqlmem/ui/static/{name}" in names
    templates = {p.name for p in (ROOT / "sqlmem" / "ui" / "templates").glob("*.html")}
    assert templates and {f"sqlmem/ui/templates/{t}" for t in templates} <= names
