"""What `sqlmem.open(target, agent_id=...)` is given for each backend in the tests that run
one suite on all three: a file path, ":memory:", or a `postgresql://` URL of the session's
throwaway server with a fresh agent id.

`backend_target(request, tmp_path)` for a fixture parametrised with `BACKENDS`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote

import pytest
from pgserver import new_agent_id

BACKENDS = ["sqlite", "memory", "postgres"]


class Target(NamedTuple):
    kind: str
    target: str
    agent_id: str | None


def as_url(dsn: str) -> str:
    """A libpq keyword DSN ("host=... port=... user=... dbname=...") as a postgresql:// URL
    (one given as a URL stays as it is)."""
    if dsn.startswith(("postgresql://", "postgres://")):
        return dsn
    fields = dict(part.split("=", 1) for part in dsn.split())
    user = fields.pop("user", "postgres")
    dbname = fields.pop("dbname", "postgres")
    query = "&".join(f"{key}={quote(value, safe='')}" for key, value in fields.items())
    return f"postgresql://{quote(user)}@/{quote(dbname)}?{query}"


def backend_target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    kind: Any = request.param
    if kind == "sqlite":
        return Target(kind, str(tmp_path / "memory.db"), None)
    if kind == "memory":
        return Target(kind, ":memory:", None)
    return Target(kind, as_url(request.getfixturevalue("pg_dsn")), new_agent_id())
