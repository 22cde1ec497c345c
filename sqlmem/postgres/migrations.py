"""PostgreSQL migrations: `migrations/postgres/NNNN_slug.sql`, the SQLite ledger's rules.

The plan is validated whole before anything runs (versions unique and contiguous from 1).
Many servers may start at once: each takes a transaction-level advisory lock before it
reads the ledger, so exactly one applies each pending file, in one transaction with its
`sqlmem_schema_version` row; the others wait, then find it applied. An applied file whose
text changed raises `MigrationChecksumError`; a database migrated by a newer sqlmem raises
`SchemaTooNewError` and is left untouched. With Citus, the ledger is a reference table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from ..errors import MigrationChecksumError, SchemaTooNewError
from ..rules.migration_plan import Migration, find_folder, read_plan
from .errors import translate

__all__ = ["Migration", "apply_migrations", "latest_version", "load_migrations", "migrations_dir"]


#: One advisory lock key for "sqlmem is migrating this database" (any constant would do).
_LOCK_KEY = 0x5F6D656D_6D696772 & 0x7FFF_FFFF_FFFF_FFFF

_CREATE_LEDGER = """
CREATE TABLE IF NOT EXISTS sqlmem_schema_version (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    sha256     text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""
_SELECT_APPLIED = "SELECT version, name, sha256 FROM sqlmem_schema_version ORDER BY version"
_INSERT_APPLIED = "INSERT INTO sqlmem_schema_version(version, name, sha256) VALUES (%s, %s, %s)"
_LEDGER_EXISTS = "SELECT to_regclass('sqlmem_schema_version') IS NOT NULL"


def migrations_dir() -> Path:
    """The migrations shipped in the wheel, else the checkout's top-level folder."""
    return find_folder(Path(__file__).resolve().parent.parent, "postgres")


def load_migrations(folder: Path | None = None) -> tuple[Migration, ...]:
    """Every migration, validated as a whole plan before any is applied."""
    return read_plan(folder or migrations_dir())


def latest_version() -> int:
    return len(load_migrations())


def _check_applied(applied: list[tuple[int, str, str]], plan: tuple[Migration, ...]) -> int:
    """The number of applied migrations, after refusing a newer or edited schema."""
    if applied and applied[-1][0] > len(plan):
        raise SchemaTooNewError(
            f"database schema version {applied[-1][0]} is newer than this sqlmem knows "
            f"({len(plan)}); upgrade sqlmem"
        )
    for version, name, sha in applied:
        if plan[version - 1].sha256 != sha:
            raise MigrationChecksumError(
                f"migration {version} ({name}) was applied with a different text "
                "(its file changed after it ran)"
            )
    return len(applied)


def apply_migrations(conn: psycopg.Connection[Any], context: str = "") -> int:
    """Bring the database to the latest version; returns it. `conn` is in autocommit.

    A database that is already current costs one read of the ledger and takes no lock.
    """
    plan = load_migrations()
    with translate(context):
        if conn.execute(_LEDGER_EXISTS).fetchone() == (True,):
            done = _check_applied(_applied(conn), plan)
            if done == len(plan):
                return done
        while True:  # one transaction per file, the ledger re-read under the lock each time
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                conn.execute(_CREATE_LEDGER)
                done = _check_applied(_applied(conn), plan)
                if done == len(plan):
                    return done
                migration = plan[done]
                conn.execute(migration.sql.encode("utf-8"))
                conn.execute(_INSERT_APPLIED, (migration.version, migration.name, migration.sha256))


def _applied(conn: psycopg.Connection[Any]) -> list[tuple[int, str, str]]:
    return [(int(v), str(n), str(h)) for v, n, h in conn.execute(_SELECT_APPLIED)]
