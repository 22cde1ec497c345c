"""Fixtures of the cluster tests: one pg_auto_failover cluster for the whole module set,
and a PgBouncer in front of a throwaway server.

They run by default (`pytest`, `.ci/run`), marked `cluster`. Without the Debian packages a
developer gets a skip naming how to install them; in CI (`CI` set) that is a failure
instead, so the cluster tests can never silently stop running there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pgserver
import pytest
from pgcluster import INSTALL_HINT, AutoFailoverCluster, PgBouncer, missing_packages


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/cluster/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.cluster)


def _require_packages() -> None:
    missing = missing_packages()
    if not missing:
        return
    message = f"cluster tests need {', '.join(missing)}: {INSTALL_HINT}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def cluster() -> Iterator[AutoFailoverCluster]:
    _require_packages()
    built = AutoFailoverCluster.start()
    try:
        yield built
    finally:
        built.stop()


@pytest.fixture(scope="session")
def single_server() -> Iterator[pgserver.PgServer]:
    """A server of the bouncer's own (the session's `pg_dsn` may be an outside one)."""
    server = pgserver.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def bouncer(single_server: pgserver.PgServer) -> Iterator[PgBouncer]:
    _require_packages()
    started = PgBouncer.start(str(single_server.socket_dir), single_server.port, pool_size=20)
    try:
        yield started
    finally:
        started.stop()
