"""Runs Google ADK's own session and memory tests against sqlmem's ADK services.

    python tests/adapters/external/adk_suite.py [--suite DIR] [pytest args ...]

The tests are not shipped in ADK's wheel or sdist: they are downloaded at run time from
google/adk-python at the pinned commit below into DIR (default: a cache folder), never
committed here; a DIR that already holds them (an offline copy) is used as it is. The
substitution and the deselected tests, with their reasons, are in `adk_plugin.py`.
Needs `pip install -e '.[adk-test]'` and, for the DATABASE parameter, PostgreSQL binaries
(a throwaway server is started, as the test suite does) or SQLMEM_TEST_POSTGRES_DSN.
"""

from __future__ import annotations

import argparse
import os
import sys
import urllib.request
from pathlib import Path

#: The adk-python commit whose tests are run (google-adk 2.13.x era).
COMMIT = "03301454c3cd2d85d3691b3026a60ce6cb703193"
#: The memory tests' file as of the same era (its own commit).
MEMORY_COMMIT = "2049ee68b54ba8b3bc562bbfdc489a1190c852f6"
FILES = {
    "tests/unittests/sessions/test_session_service.py": COMMIT,
    "tests/unittests/memory/test_in_memory_memory_service.py": MEMORY_COMMIT,
}
RAW = "https://raw.githubusercontent.com/google/adk-python/{commit}/{path}"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def download(suite: Path) -> None:
    for path, commit in FILES.items():
        target = suite / path
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(RAW.format(commit=commit, path=path), timeout=60) as answer:
            target.write_bytes(answer.read())
    for folder in {suite / p for path in FILES for p in Path(path).parents if str(p) != "."}:
        (folder / "__init__.py").touch()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    parser.add_argument("--suite", type=Path, default=cache / "sqlmem-adk-suite" / COMMIT[:12])
    args, pytest_args = parser.parse_known_args(argv)
    download(args.suite)
    import pytest

    sys.path[:0] = [str(ROOT), str(HERE)]
    os.chdir(args.suite)
    return pytest.main(
        [
            *FILES,
            "-p",
            "adk_plugin",
            "-p",
            "no:cacheprovider",
            "-o",
            "asyncio_mode=auto",
            "--rootdir",
            str(args.suite),
            *pytest_args,
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
