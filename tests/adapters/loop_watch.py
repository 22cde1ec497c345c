"""The event-loop blocking detector the adapters' async tests run under: blockbuster
(the detector langchain-core's own suite runs), which raises `BlockingError` for a
blocking call (a file stat or read, a lock wait, a sleep, a socket) made on a running
loop's thread, plus the waits its own list misses.

Not a test module: `test_async_nonblocking.py` and `test_adk.py` (which runs in a venv of
its own) import it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import sqlmem

__all__ = ["ALSO_WATCHED", "Where", "loop_is_watched", "watching", "where_for"]

#: Waits blockbuster's own list misses, watched too: psycopg waits for the server in C
#: (its `wait_c`), below the socket functions blockbuster patches, and apsw runs SQLite
#: in C, where blockbuster watches only the `sqlite3` module. So psycopg's wait
#: functions, the pool's checkout, and sqlmem's SQLite engine's read and write entries.
ALSO_WATCHED = (
    ("psycopg.waiting", None, "wait"),
    ("psycopg.waiting", None, "wait_conn"),
    ("psycopg_pool", "ConnectionPool", "getconn"),
    ("sqlmem.sqlite.core.engine", "Engine", "read"),
    ("sqlmem.sqlite.core.engine", "Engine", "write"),
)


@contextmanager
def watching() -> Iterator[Any]:
    """Blockbuster over the whole process (and the waits above) while the block runs."""
    blockbuster = pytest.importorskip("blockbuster")
    bb = blockbuster.BlockBuster()
    for module_name, class_name, name in ALSO_WATCHED:
        owner = importlib.import_module(module_name)
        if class_name is not None:
            owner = getattr(owner, class_name)
        full_name = ".".join(n for n in (module_name, class_name, name) if n)
        bb.functions[full_name] = blockbuster.BlockBusterFunction(owner, name)
    bb.activate()
    try:
        yield bb
    finally:
        bb.deactivate()


class Where:
    """`where(name)`: what an adapter is built from: a path named `name` in the test's
    folder, or (every name alike) one database opened before the loop runs. `probe`: a
    database of the same backend, open, to show the detector catches its queries."""

    def __init__(self, build: Callable[[str], Any], probe: Any) -> None:
        self._build, self.probe = build, probe

    def __call__(self, name: str) -> Any:
        return self._build(name)


def where_for(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Where]:
    """A `Where` of `kind` ("sqlite-path" or "postgres": an agent of the session's
    throwaway server), for a fixture to yield from."""
    if kind == "postgres":
        db = request.getfixturevalue("open_pg")()
        yield Where(lambda name: db, db)
        return
    probe = sqlmem.open(tmp_path / "probe.db")
    yield Where(lambda name: tmp_path / name, probe)
    probe.close()


def loop_is_watched(where: Where) -> None:
    """The detector is live: a blocking call on the loop raises (the test can fail), a
    query of the backend's database included."""
    from blockbuster import BlockingError

    with pytest.raises(BlockingError):
        Path(__file__).stat()
    with pytest.raises(BlockingError):
        where.probe.history.get_all("probe")
