"""The frameworks' own test suites, with sqlmem's classes substituted: what to download,
how to substitute, and which tests are left out and why.

Each suite comes from the framework's sdist on PyPI at the installed version (`pip
download --no-deps --no-binary :all:`), is extracted to a scratch folder, patched so its
tests build sqlmem's class where they built the framework's (the shims beside this file),
and run by pytest in a subprocess. Nothing of a suite is committed.

Exclusions are the tests that probe the framework class's internals (its private
attributes, its own tables through `sqlite3`, its migrations list, its docstring), never
behaviour; each names what it probes. `tests/adapters/test_framework_suites.py` runs
them (`pytest -m frameworks`) on a SQLite file and on PostgreSQL; `python
tests/adapters/external/suites.py [NAME]` runs them by hand and prints the counts (on
PostgreSQL when `SQLMEM_SHIM_POSTGRES_DSN` names a database: `shim_backend.py`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
#: Read by the shims (`shim_backend.py`): set, their databases are agents of PostgreSQL.
POSTGRES_VARIABLE = "SQLMEM_SHIM_POSTGRES_DSN"

_POOL = "probes SQLiteSession's private per-thread connection pool"
_ROWS = "writes corrupt JSON rows into SQLiteSession's own table through its private connection"
_TABLES = "drops or alters SQLiteSession's own tables (agent_sessions, agent_messages) with sqlite3"


@dataclass(frozen=True)
class Suite:
    """One framework suite: the sdist, its test files, the substitution, the exclusions."""

    name: str
    dist: str  # the distribution whose sdist holds the tests (its installed version)
    files: tuple[str, ...]
    #: (file, text, replacement): the substitution, applied to the extracted tests.
    patches: tuple[tuple[str, str, str], ...] = ()
    #: Appended to a file (the SDK's conftest swaps its class for the shim there).
    appends: tuple[tuple[str, str], ...] = ()
    #: node id prefix -> why it is left out.
    excluded: dict[str, str] = field(default_factory=dict)
    #: Extra pytest arguments (the suite's own addopts may need tools we do not install).
    args: tuple[str, ...] = ()


#: The SDK's session tests, each name after this prefix.
_S = "tests/memory/test_session.py::test_sqlite_session_"
_X = "tests/memory/test_compaction_suffix.py::test_"

OPENAI_AGENTS = Suite(
    name="openai-agents",
    dist="openai-agents",
    files=(
        "tests/memory/test_session.py",
        "tests/memory/test_session_limit.py",
        "tests/memory/test_compaction_model_visibility.py",
        "tests/memory/test_compaction_suffix.py",
    ),
    appends=(
        (
            "tests/conftest.py",
            "\nimport agents as _agents, agents.memory as _agents_memory\n"
            "from openai_agents_shim import SQLiteSession as _SqlmemSession\n"
            "_agents.SQLiteSession = _agents_memory.SQLiteSession = _SqlmemSession\n",
        ),
    ),
    # The suffix tests run each case on SQLiteSession and on the SDK's AsyncSQLiteSession;
    # only the first is substituted, the second tests the SDK alone.
    args=("-k", "not async-sqlite"),
    excluded={
        _S + "close_closes_worker_thread_connections": _POOL,
        _S + "reaps_connections_from_exited_worker_threads": _POOL,
        _S + "closes_retired_connections_before_the_next_allocation": _POOL,
        _S + "keeps_connections_of_live_worker_threads": _POOL,
        _S + "rollback_failure_evicts_connection": _POOL,
        _S + "close_retries_quarantined_connection": _POOL,
        _S + "post_commit_cancellation_propagates_after_known_outcome": (
            "patches SQLiteSession's private _get_connection and connection set (sqlmem's "
            "equivalent: test_openai_agents.py::test_cancelled_write_reports_only_once_done)"
        ),
        _S + "pop_item_skips_corrupt_most_recent": _ROWS,
        _S + "pop_item_returns_none_after_dropping_only_corrupt_rows": _ROWS,
        _S + "get_items_limit_skips_corrupt_newest_rows": _ROWS,
        _S + "get_items_session_settings_limit_skips_corrupt_rows": _ROWS,
        _S + "file_lock_is_shared_across_instances": (
            "reads SQLiteSession's private file-lock registry (_lock)"
        ),
        _S + "failed_add_items_releases_write_lock": (
            "probes the write lock through SQLiteSession's agent_sessions table with sqlite3 "
            "(and expects TypeError: sqlmem refuses the item with InvalidArgumentError before "
            "any transaction)"
        ),
        _S + "failed_clear_session_rolls_back": _TABLES,
        _S + "failed_pop_item_releases_write_lock": _TABLES,
        _X + "suffix_transaction_rolls_back_failed_insert": (
            "adds a trigger to SQLiteSession's agent_messages table (sqlmem's equivalent: "
            "test_openai_agents_compaction.py::test_a_refused_output_changes_nothing)"
        ),
        _X + "failed_encrypted_suffix_transaction_preserves_original_tokens": (
            "adds a trigger to SQLiteSession's agent_messages table"
        ),
        _X + "cancelled_suffix_transaction_settles_before_newer_append": (
            "patches SQLiteSession's private _insert_items"
        ),
    },
)

_SYNC = (
    "from langgraph.store.sqlite import SqliteStore\n",
    "from langgraph_shim import SqliteStore\n",
)
_ASYNC = "from langgraph_shim import AsyncSqliteStore\n"

LANGGRAPH_STORE = Suite(
    name="langgraph-checkpoint-sqlite",
    dist="langgraph-checkpoint-sqlite",
    files=("tests/test_store.py", "tests/test_async_store.py", "tests/test_ttl.py"),
    patches=(
        ("tests/test_store.py", *_SYNC),
        ("tests/test_ttl.py", *_SYNC),
        ("tests/test_ttl.py", "from langgraph.store.sqlite.aio import AsyncSqliteStore\n", _ASYNC),
        (
            "tests/test_async_store.py",
            "from langgraph.store.sqlite import AsyncSqliteStore\n",
            _ASYNC,
        ),
    ),
    args=("-o", "addopts=", "-o", "asyncio_mode=auto"),
    excluded={
        "tests/test_store.py::test_vector_store_initialization": (
            "reads SqliteStore.conn, its sqlite3 connection"
        ),
        "tests/test_store.py::test_nonnull_migrations": (
            "reads SqliteStore.MIGRATIONS, its migration list"
        ),
    },
)

_HISTORY = "tests/unit_tests/chat_history/test_chat_history.py"

LANGCHAIN_CORE = Suite(
    name="langchain-core",
    dist="langchain-core",
    files=(_HISTORY, "tests/unit_tests/runnables/test_history.py"),
    patches=(
        (
            "tests/unit_tests/runnables/test_history.py",
            "from langchain_core.chat_history import InMemoryChatMessageHistory\n",
            "from langchain_shim import InMemoryChatMessageHistory\n",
        ),
        (
            _HISTORY,
            "    InMemoryChatMessageHistory,\n)",
            ")\nfrom langchain_shim import InMemoryChatMessageHistory",
        ),
    ),
    excluded={
        _HISTORY + "::test_chat_history_deprecated[InMemoryChatMessageHistory]": (
            "checks that LangChain's own class docstring announces its deprecation"
        ),
    },
)

SUITES = {s.name: s for s in (OPENAI_AGENTS, LANGGRAPH_STORE, LANGCHAIN_CORE)}


@dataclass
class Outcome:
    """One run: the release tested and every test's outcome by node id."""

    release: str
    results: dict[str, str]  # node id -> "passed" | "failed" | "error" | "skipped"

    def count(self, outcome: str) -> int:
        return sum(1 for r in self.results.values() if r == outcome)


def fetch(suite: Suite, cache: Path) -> Path:
    """The suite's sdist for the installed version, extracted under `cache` (reused)."""
    release = version(suite.dist)
    cache.mkdir(parents=True, exist_ok=True)
    stem = f"{suite.dist.replace('-', '_')}-{release}"
    root = cache / stem
    if root.is_dir():
        return root
    archive = cache / f"{stem}.tar.gz"
    if not archive.exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"{suite.dist}=={release}",
                "-d",
                str(cache),
            ],
            check=True,
            timeout=600,
        )
    scratch = cache / f"{stem}.partial"
    with tarfile.open(archive) as tar:
        tar.extractall(scratch, filter="data")
    (scratch / stem).rename(root)
    scratch.rmdir()
    return root


def prepare(suite: Suite, root: Path, work: Path) -> Path:
    """A patched copy of the suite's tests (and project config) in `work`."""
    import shutil

    target = work / root.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(root, target)
    for name, text, replacement in suite.patches:
        path = target / name
        source = path.read_text(encoding="utf-8")
        if text not in source:
            raise RuntimeError(f"{suite.name}: {name} no longer has {text.strip()!r}")
        path.write_text(source.replace(text, replacement), encoding="utf-8")
    for name, text in suite.appends:
        with (target / name).open("a", encoding="utf-8") as handle:
            handle.write(text)
    return target


def run_suite(
    suite: Suite,
    cache: Path,
    work: Path,
    timeout: float = 600,
    *,
    postgres_dsn: str | None = None,
) -> Outcome:
    """Run the substituted suite; every test's outcome (the excluded ones deselected).
    `postgres_dsn`: the shims put their databases there (None: SQLite files)."""
    root = prepare(suite, fetch(suite, cache), work)
    report = work / f"{suite.name}.xml"
    deselect = [arg for node in suite.excluded for arg in ("--deselect", node)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            *suite.args,
            *deselect,
            *suite.files,
        ],
        cwd=root,
        env=_env(postgres_dsn),
        timeout=timeout,
        stdout=subprocess.DEVNULL,
        check=False,
    )
    return Outcome(version(suite.dist), _results(report))


def collect(suite: Suite, root: Path) -> list[str]:
    """The node ids of the suite's tests, excluded ones included (collected, not run)."""
    listing = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--collect-only",
            *suite.args,
            *suite.files,
        ],
        cwd=root,
        env=_env(None),
        timeout=600,
        capture_output=True,
        text=True,
        check=False,
    )
    return [line for line in listing.stdout.splitlines() if "::" in line]


def _env(postgres_dsn: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop(POSTGRES_VARIABLE, None)
    if postgres_dsn:
        env[POSTGRES_VARIABLE] = postgres_dsn
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(HERE), env.get("PYTHONPATH", "")])
    return env


def _results(report: Path) -> dict[str, str]:
    results: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        test_class = [parts.pop()] if parts and parts[-1][:4] == "Test" else []
        node = "::".join(["/".join(parts) + ".py", *test_class, case.get("name", "")])
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = "failed" if child.tag == "failure" else child.tag
        results[node] = outcome
    return results


def main(names: list[str]) -> int:
    import tempfile

    cache = Path(
        os.environ.get("SQLMEM_SUITES_CACHE", Path(tempfile.gettempdir()) / "sqlmem-suites")
    )
    failed = 0
    postgres_dsn = os.environ.get(POSTGRES_VARIABLE)
    backend = "PostgreSQL" if postgres_dsn else "SQLite"
    for name in names or list(SUITES):
        suite = SUITES[name]
        with tempfile.TemporaryDirectory(prefix="sqlmem-suite-") as work:
            outcome = run_suite(suite, cache, Path(work), postgres_dsn=postgres_dsn)
            listed = collect(suite, prepare(suite, fetch(suite, cache), Path(work) / "listing"))
        left_out = [n for n in listed if n.startswith(tuple(suite.excluded))]
        print(
            f"{suite.name} {outcome.release} on {backend}: {outcome.count('passed')} passed of "
            f"{len(listed)} collected, {len(left_out)} excluded ({len(outcome.results)} run)"
        )
        for node, result in sorted(outcome.results.items()):
            if result != "passed":
                failed += 1
                print(f"  {result}: {node}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
