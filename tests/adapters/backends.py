"""The databases the adapters' suites run on besides a SQLite file: the in-memory
database and a fresh PostgreSQL agent of the session's throwaway server.

A test module that imports the existing adapter tests and defines `db` with
`other_backend_db` runs those tests on every backend: the tests take their database
from the `db` fixture, and the adapters take any `Database`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import sqlmem

BACKENDS = ["memory", "postgres"]


def open_backend(request: pytest.FixtureRequest, kind: str) -> Any:
    """A database of `kind`, closed when the test ends (the PostgreSQL agent by `open_pg`)."""
    if kind == "postgres":
        return request.getfixturevalue("open_pg")()
    db = sqlmem.open(":memory:")
    request.addfinalizer(db.close)
    return db


def other_backend_db(request: pytest.FixtureRequest) -> Iterator[Any]:
    yield open_backend(request, request.param)


def postgres_url(dsn: str) -> str:
    """`dsn` as a `postgresql://` URL, what `sqlmem.open` recognises (the throwaway
    server's DSN is in key=value form, which `sqlmem.open` would take for a file path)."""
    from urllib.parse import quote, urlencode

    from psycopg.conninfo import conninfo_to_dict

    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
    dbname = params.pop("dbname", "postgres")
    return f"postgresql:///{quote(dbname)}?{urlencode(params)}"
