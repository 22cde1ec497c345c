"""The documentation's Python examples run, and print what the pages say they print.

Each page's ```python blocks run in order in one namespace (a reader goes top to bottom),
in a fresh temporary folder. A block followed by a ```text title="prints" block must
print exactly that text. The site itself must build with `mkdocs build --strict` (the test
extra installs it)."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: Pages whose examples need an extra that cannot share the test environment (Google ADK
#: pins older versions of packages other extras need): CI runs them in a venv of their own
#: (.ci/run, tests/adapters/test_docs_adapters.py).
OWN_VENV = {"adk.md"}
PAGES = sorted(p for p in DOCS.rglob("*.md"))
EXAMPLE_PAGES = [p for p in PAGES if p.name not in OWN_VENV]
FENCE = re.compile(r'```(python|text title="prints")\n(.*?)```', flags=re.DOTALL)


pytestmark = pytest.mark.usefixtures("close_the_loop_run_sync_leaves")


def _examples(page: Path) -> list[tuple[str, str | None]]:
    """(code, expected output or None) for each Python block of the page, in order."""
    blocks = FENCE.findall(page.read_text(encoding="utf-8"))
    examples: list[tuple[str, str | None]] = []
    for kind, body in blocks:
        if kind == "python":
            examples.append((body, None))
        elif examples and examples[-1][1] is None:
            examples[-1] = (examples[-1][0], body)
        else:
            raise AssertionError(f"{page}: an output block follows no Python block")
    return examples


@pytest.mark.parametrize(
    "page", EXAMPLE_PAGES, ids=[str(p.relative_to(DOCS)) for p in EXAMPLE_PAGES]
)
def test_page_examples_run_and_print_what_the_page_says(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    examples = _examples(page)
    if not examples:
        return
    if "SQLMEM_DOCS_POSTGRES_DSN" in page.read_text(encoding="utf-8"):
        # A page that shows PostgreSQL runs against the tests' throwaway server.
        from urllib.parse import quote, urlencode

        from psycopg.conninfo import conninfo_to_dict

        params = {k: str(v) for k, v in conninfo_to_dict(request.getfixturevalue("pg_dsn")).items()}
        url = f"postgresql:///{quote(params.pop('dbname', 'postgres'))}?{urlencode(params)}"
        monkeypatch.setenv("SQLMEM_DOCS_POSTGRES_DSN", url)  # sqlmem.open knows a URL
    # A page that shows a server only where one is configured must not reach the caller's.
    monkeypatch.delenv("SQLMEM_POSTGRES_URL", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for number, (code, expected) in enumerate(examples, start=1):
        out = io.StringIO()
        compiled = compile(code, f"{page.relative_to(ROOT)} example {number}", "exec")
        with contextlib.redirect_stdout(out):
            exec(compiled, namespace)
        if expected is not None:
            assert out.getvalue() == expected, f"{page.name} example {number} printed otherwise"


def test_every_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [str(p.relative_to(DOCS)) for p in PAGES if str(p.relative_to(DOCS)) not in nav]
    assert not missing, f"pages missing from mkdocs.yml nav: {missing}"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    assert mkdocs is not None, "mkdocs is missing: the test extra installs the docs extra"
    result = subprocess.run(
        [mkdocs, "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
