"""Where a shim's database lives while a framework's suite runs: a SQLite file (the
default), or, with `SQLMEM_SHIM_POSTGRES_DSN` set (a libpq DSN or a `postgresql://`
URL), an agent of that PostgreSQL database: the same framework tests then judge the
adapters on PostgreSQL.

Not collected by pytest: the shims beside this file import it inside the suite's
subprocess (`suites.py` sets the variable for the PostgreSQL run).

One `PostgresBackend` (one small pool) serves the whole subprocess, as an application
with many agents would hold it; each database a test asks for is an agent of its own,
named after the file the framework's class was given, so two instances given the same
file share their data, as they would on SQLite. A run-unique prefix keeps a rerun on a
long-lived server from reading an earlier run's rows.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import threading
import uuid
from typing import Any

__all__ = ["postgres_agent"]

_RUN = uuid.uuid4().hex[:10]
_lock = threading.Lock()
_backend: Any = None


def postgres_agent(name: str | os.PathLike[str] | None = None) -> Any:
    """The agent for `name` (a file the framework's class was given; None: a fresh
    agent of its own) of `SQLMEM_SHIM_POSTGRES_DSN`'s database; None when the
    variable is not set (the shim then uses a SQLite file)."""
    dsn = os.environ.get("SQLMEM_SHIM_POSTGRES_DSN")
    if not dsn:
        return None
    if name is None or str(name) == ":memory:":
        suffix = uuid.uuid4().hex[:16]
    else:
        suffix = hashlib.sha256(os.fsencode(os.path.abspath(name))).hexdigest()[:16]
    return _shared_backend(dsn).open(f"shim-{_RUN}-{suffix}")


def _shared_backend(dsn: str) -> Any:
    global _backend
    with _lock:
        if _backend is None:
            from sqlmem.postgres import PostgresBackend

            _backend = PostgresBackend(dsn, pool_size=4)
            atexit.register(_backend.close)
        return _backend
