"""The frameworks' own suites against sqlmem's adapters (`tests/adapters/external/suites.py`).

Marked `frameworks` and left out of the default run (each downloads an sdist from PyPI and
runs a few hundred of the framework's tests in a subprocess: a few minutes for the three,
twice); `.ci/run` runs them with `pytest -m frameworks`. A downloaded suite is kept under
`$SQLMEM_SUITES_CACHE` (default: a folder in the temporary directory) for the next run.

Every suite runs twice: with the adapters' databases in SQLite files, and as agents of a
PostgreSQL database (the session's throwaway server, `pg_dsn`): the adapters take any
database, and the framework's own tests judge both.

Each suite is the one of the installed release: upgrading a framework runs its newest
tests. Every test not excluded must pass, and every exclusion must still name a test of
the suite (an exclusion that outlived its test is a stale list, not a pass).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "external"))
import suites

pytestmark = pytest.mark.frameworks


@pytest.fixture(scope="module")
def cache() -> Path:
    default = Path(tempfile.gettempdir()) / "sqlmem-suites"
    return Path(os.environ.get("SQLMEM_SUITES_CACHE", default))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("name", sorted(suites.SUITES))
def test_framework_suite_passes_with_sqlmem_substituted(
    name: str, backend: str, cache: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    suite = suites.SUITES[name]
    dsn = request.getfixturevalue("pg_dsn") if backend == "postgres" else None
    outcome = suites.run_suite(suite, cache, tmp_path, postgres_dsn=dsn)
    not_passed = {node: r for node, r in outcome.results.items() if r != "passed"}
    label = f"{name} {outcome.release} on {backend}"
    assert outcome.count("passed") > 0, f"{label}: nothing ran"
    assert not not_passed, f"{label}: {not_passed}"
    if backend != "sqlite":
        return  # the list of tests does not depend on the backend: checked once
    # The exclusions still name tests of this release (collected without running them).
    source = suites.prepare(suite, suites.fetch(suite, cache), tmp_path / "listing")
    listed = suites.collect(suite, source)
    stale = [node for node in suite.excluded if not any(n.startswith(node) for n in listed)]
    assert not stale, f"{name} {outcome.release}: exclusions naming no test: {stale}"
