"""The README's Python examples run, so they never rot; its commands match CI's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_example_runs(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Twice, as a user pasting it again would: the examples make their own folders. The
    PostgreSQL example runs against the tests' throwaway server."""
    if "SQLMEM_POSTGRES_URL" in BLOCKS[index]:
        monkeypatch.setenv("SQLMEM_POSTGRES_URL", request.getfixturevalue("pg_dsn"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    code = compile(BLOCKS[index], f"README.md example {index + 1}", "exec")
    for _ in range(2):
        exec(code, {})


def test_readme_has_python_examples() -> None:
    """One example in the README (the rest live on the documentation site, whose examples
    tests/test_docs.py runs): the parametrised test above must not pass vacuously."""
    assert len(BLOCKS) >= 1


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """The README's test command is CI's own script, and that script installs the project
    from its own files and runs the whole suite."""
    assert re.search(r"^bash \.ci/run$", README, flags=re.MULTILINE)
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q -e '.[test]'" in ci
    assert re.search(r"^python3 -m venv .*-m pytest -q$", ci, flags=re.MULTILINE)


def test_readme_links_point_at_files_that_exist() -> None:
    targets = re.findall(r"\]\(([^)#]+)\)", README)
    missing = [t for t in targets if not t.startswith("http") and not (ROOT / t).exists()]
    assert targets and not missing, missing


def test_readme_stays_short() -> None:
    """The README is the door; the documentation site holds the rest."""
    assert len(README.splitlines()) <= 150
