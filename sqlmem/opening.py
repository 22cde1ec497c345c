"""`sqlmem.open(target)`: one opener for every backend.

Why one: an agent's code should not change when its memory moves from a file to a
server. The target says where the memory lives:

- a filesystem path (str or `os.PathLike`): the SQLite file, created and migrated if
  needed (what `sqlmem.open` always did);
- `":memory:"`: the in-memory database (the twins, nothing written anywhere);
- a `postgresql://` or `postgres://` URL with `agent_id`: that agent's rows of the shared
  PostgreSQL database (needs the `postgres` extra); a libpq keyword string
  (`"host=db port=5432 dbname=memory"`) names one too, as it does for psycopg.

Every result is a `sqlmem.protocols.Database`. `agent_id` is what names an agent on a
shared server; a file or the in-memory database holds one agent, so there the id is only
checked (the same call works whatever the target). Other SQLite URIs (`file:...`) stay
refused: WAL needs a plain file.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Literal, overload

from .agent_ids import validate_agent_id
from .errors import InvalidArgumentError, SqlmemError

if TYPE_CHECKING:
    from .config import StoreConfig
    from .inmemory.db import InMemoryDB
    from .protocols import Database, Embedder
    from .sqlite.db import MemoryDB

__all__ = ["MEMORY_TARGET", "is_postgres_url", "missing_postgres", "open"]

#: The target that opens the in-memory database.
MEMORY_TARGET = ":memory:"

_URL_SCHEMES = ("postgresql://", "postgres://")

#: libpq's connection keywords: a target made only of `keyword=value` words using them is a
#: connection string, not a file name (a file called "host=db port=5432" would otherwise be
#: created beside the program, with the agent's memory in it instead of on the server).
_CONNINFO_KEYWORDS = frozenset(
    [
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "channel_binding",
        "connect_timeout",
        "client_encoding",
        "options",
        "application_name",
        "fallback_application_name",
        "keepalives",
        "keepalives_idle",
        "keepalives_interval",
        "keepalives_count",
        "tcp_user_timeout",
        "replication",
        "gssencmode",
        "sslmode",
        "requiressl",
        "sslcompression",
        "sslcert",
        "sslkey",
        "sslpassword",
        "sslcertmode",
        "sslrootcert",
        "sslcrl",
        "sslcrldir",
        "sslsni",
        "requirepeer",
        "ssl_min_protocol_version",
        "ssl_max_protocol_version",
        "krbsrvname",
        "gsslib",
        "gssdelegation",
        "service",
        "target_session_attrs",
        "load_balance_hosts",
    ]
)
_CONNINFO_WORD = re.compile(r"\s*([a-z_]+)\s*=\s*('(?:[^'\\]|\\.)*'|\S*)")


def is_postgres_url(target: object) -> bool:
    """Whether `target` names a PostgreSQL database (a `postgresql://` or `postgres://`
    URL, the scheme in any case, or a libpq keyword string such as "host=db dbname=m")."""
    if not isinstance(target, str):
        return False
    return target[:13].lower().startswith(_URL_SCHEMES) or _is_conninfo(target)


def _is_conninfo(target: str) -> bool:
    """Whether every word of `target` is `keyword=value` with a libpq keyword."""
    position, found = 0, False
    while position < len(target):
        word = _CONNINFO_WORD.match(target, position)
        if word is None or word.group(1) not in _CONNINFO_KEYWORDS:
            return target[position:].strip() == "" and found
        found, position = True, word.end()
    return found


@overload
def open(
    target: Literal[":memory:"],
    config: StoreConfig | None = None,
    *,
    embedder: Embedder | None = None,
    agent_id: str | None = None,
) -> InMemoryDB: ...


@overload
def open(
    target: os.PathLike[str],
    config: StoreConfig | None = None,
    *,
    embedder: Embedder | None = None,
    agent_id: str | None = None,
) -> MemoryDB: ...


@overload
def open(
    target: str,
    config: StoreConfig | None = None,
    *,
    embedder: Embedder | None = None,
    agent_id: None = None,
) -> MemoryDB | InMemoryDB: ...


@overload
def open(
    target: str,
    config: StoreConfig | None = None,
    *,
    embedder: Embedder | None = None,
    agent_id: str,
) -> Database: ...


def open(
    target: str | os.PathLike[str],
    config: StoreConfig | None = None,
    *,
    embedder: Embedder | None = None,
    agent_id: str | None = None,
) -> Database:
    """Open the memory at `target` (a path, ":memory:" or a PostgreSQL URL; see the
    module docstring).

    Typed for what each target can give: a `pathlib.Path` a `MemoryDB`, the literal
    ":memory:" the in-memory database, a str without `agent_id` either of the two
    (narrow with `isinstance` to reach SQLite-only methods such as `backup()`), a str
    with `agent_id` any `Database` (PostgreSQL for a URL)."""
    if agent_id is not None:
        validate_agent_id(agent_id)
    if is_postgres_url(target):
        assert isinstance(target, str)
        if agent_id is None:
            raise InvalidArgumentError(
                "agent_id is required with a PostgreSQL URL or connection string: one "
                "database holds every agent's rows (sqlmem.open(url, agent_id='my-agent'))"
            )
        return _open_postgres(target, agent_id, config, embedder)
    if isinstance(target, str) and target == MEMORY_TARGET:
        from .inmemory.db import InMemoryDB

        return InMemoryDB(config, embedder=embedder)
    from .sqlite.db import MemoryDB

    return MemoryDB(target, config, embedder=embedder)


def _open_postgres(
    url: str, agent_id: str, config: StoreConfig | None, embedder: Embedder | None
) -> Database:
    """That agent's database on the server at `url`, or `SqlmemError` naming the extra
    when psycopg is missing."""
    try:
        from .postgres import open as open_postgres
    except ModuleNotFoundError as exc:
        error = missing_postgres(exc)
        if error is exc:
            raise
        raise error from exc
    return open_postgres(url, agent_id, config, embedder=embedder)


def missing_postgres(exc: ModuleNotFoundError) -> Exception:
    """The error for a failed import of `sqlmem.postgres`: `SqlmemError` naming the extra
    when psycopg is what is missing, else the import error itself."""
    if (exc.name or "").split(".")[0] not in ("psycopg", "psycopg_pool"):
        return exc
    return SqlmemError("PostgreSQL needs the 'postgres' extra: pip install 'sqlmem[postgres]'")
