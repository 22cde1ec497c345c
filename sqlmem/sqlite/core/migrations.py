"""Versioned SQL migrations: load, validate, apply.

Files are `migrations/NNNN_slug.sql`. The whole plan is validated before anything runs
(versions unique and contiguous from 1). Each pending file of an existing database is
applied in its own `BEGIN IMMEDIATE` transaction together with its `schema_version` row
and `PRAGMA user_version`, and the version is re-read inside that transaction, so two
processes migrating the same file each see the other's work and every migration runs
exactly once. A new, empty file gets the whole plan in one such transaction (every file
still with its own ledger row): creating an agent's file then costs one commit instead of
one per migration, and the file is either fully made or left empty, never half-migrated.
An applied file whose text changed is refused (`MigrationChecksumError`); a file newer
than this code is refused before anything is written (`SchemaTooNewError`).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import apsw

from ...errors import (
    MigrationChecksumError,
    MigrationError,
    SchemaTooNewError,
)
from ...rules.encoding import now_ms
from ...rules.migration_plan import Migration, find_folder, read_plan
from ..apsw_errors import map_apsw_error, translate_errors
from ..stores.fts_names import FACTS_FTS

__all__ = [
    "Migration",
    "apply_migrations",
    "latest_version",
    "load_migrations",
    "migrations_dir",
    "read_fts_tokenizer",
]


# The tokenizer spec is pasted into the schema text (CREATE VIRTUAL TABLE cannot take a
# bound parameter). StoreConfig already allows only built-in tokenizer names and
# alphanumeric arguments; this is the last check before the text becomes SQL.
_TOKENIZER_SPEC = re.compile(r"[a-z0-9]+(?: [A-Za-z0-9_]+)*\Z")

# The ledger itself is the one table not created by a migration: it must exist before the
# first migration can be recorded in the same transaction that applies it.
_CREATE_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_version (
    version    INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    sha256     TEXT    NOT NULL,
    applied_at INTEGER NOT NULL
)
"""
_SELECT_APPLIED = "SELECT version, name, sha256 FROM schema_version ORDER BY version"
_INSERT_APPLIED = (
    "INSERT INTO schema_version(version, name, sha256, applied_at) VALUES (?, ?, ?, ?)"
)


@cache
def migrations_dir() -> Path:
    """The migrations shipped in the wheel, else the checkout's top-level folder (looked
    up once: every open asks, and resolving the path costs a few system calls)."""
    return find_folder(Path(__file__).resolve().parents[2])


def load_migrations(folder: Path | None = None) -> tuple[Migration, ...]:
    """Every migration, validated as a whole plan before any is applied."""
    return read_plan(folder or migrations_dir())


def latest_version() -> int:
    return len(load_migrations())


def read_user_version(conn: apsw.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").get)


def refuse_foreign_files(conn: apsw.Connection, path: Path) -> None:
    """Before anything is written: a file from a newer sqlmem, a SQLite file that is not
    ours, or one whose applied migrations do not match ours, stays exactly as it is.

    This runs before the journal mode is switched to WAL (which rewrites the header), so
    every refusal here leaves the file's bytes unchanged. That includes a file with
    `user_version` set by another program and no `schema_version` ledger: it used to be
    refused only while migrating, after the switch to WAL had already changed it.
    """
    plan = load_migrations()
    with translate_errors(str(path)):
        # One read transaction: the version and the tables must come from the same
        # snapshot, or a process that just migrated a new file between the two reads makes
        # it look like a foreign file with tables and no version (seen with 4 openers).
        conn.execute("BEGIN")
        try:
            version = read_user_version(conn)
            if version == 0:
                _refuse_foreign_file(conn, path)
            elif version <= len(plan):
                _verify_checksums(conn, path, plan[:version])
        finally:
            if conn.in_transaction:  # it only read: ending it this way can hide nothing
                conn.execute("ROLLBACK")
    if version > len(plan):
        raise SchemaTooNewError(
            f"{path}: schema version {version} is newer than this sqlmem knows "
            f"(latest {len(plan)}); upgrade sqlmem to open it"
        )


_FTS_SQL = f"SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = '{FACTS_FTS}'"
_TOKENIZE = re.compile(r"tokenize\s*=\s*'([^']*)'", re.IGNORECASE)


def read_fts_tokenizer(conn: apsw.Connection) -> str | None:
    """The tokenizer the file's FTS tables were created with (StoreConfig.tokenizer only
    applies to new files; an existing file must be queried with its own)."""
    rows = conn.execute(_FTS_SQL).fetchall()
    found = _TOKENIZE.search(str(rows[0][0])) if rows else None
    return " ".join(found.group(1).split()) if found else None


def apply_migrations(conn: apsw.Connection, path: Path, tokenizer: str) -> int:
    """Bring the file to the latest version; returns how many migrations this call ran."""
    plan = load_migrations()
    try:
        current = read_user_version(conn)
        if current:
            _verify_checksums(conn, path, plan[:current])
        elif plan:
            ran = _apply_all_to_new_file(conn, path, plan, tokenizer)
            if ran:
                return ran
            current = read_user_version(conn)  # another process made it meanwhile
            _verify_checksums(conn, path, plan[:current])
        ran = 0
        for migration in plan[current:]:
            ran += _apply_one(conn, path, migration, plan, tokenizer)
        return ran
    except apsw.Error as exc:
        raise map_apsw_error(exc, f"{path}: migrating") from exc


def _apply_one(
    conn: apsw.Connection,
    path: Path,
    migration: Migration,
    plan: tuple[Migration, ...],
    tokenizer: str,
) -> int:
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Re-read inside the write lock: another process may have just applied it.
        current = read_user_version(conn)
        if current > len(plan):
            raise SchemaTooNewError(
                f"{path}: schema version {current} is newer than this sqlmem knows "
                f"(latest {len(plan)})"
            )
        if current >= migration.version:
            conn.execute("COMMIT")
            return 0
        if current == 0:
            _refuse_foreign_file(conn, path)
        # A file keeps the tokenizer it was made with: a later migration's FTS tables use
        # it too (StoreConfig.tokenizer only chooses it for a new file), or its queries,
        # compiled for the file's tokenizer, would not match the new tables' tokens.
        tokenizer = read_fts_tokenizer(conn) or tokenizer
        if not _TOKENIZER_SPEC.match(tokenizer):
            raise MigrationError(f"{path}: refusing tokenizer spec {tokenizer!r}")
        conn.execute(_CREATE_LEDGER)
        conn.execute(migration.sql.replace("{tokenizer}", tokenizer))
        conn.execute(
            _INSERT_APPLIED, (migration.version, migration.name, migration.sha256, now_ms())
        )
        # PRAGMA cannot take a bound parameter; the version is an int from our own plan.
        conn.execute(f"PRAGMA user_version = {int(migration.version)}")
        conn.execute("COMMIT")
        return 1
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _apply_all_to_new_file(
    conn: apsw.Connection, path: Path, plan: tuple[Migration, ...], tokenizer: str
) -> int:
    """Every migration of the plan in one write transaction, when the file is still new
    (version 0 read inside the write lock); returns how many ran, 0 when another process
    got there first (the caller then goes on from the version it finds)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = read_user_version(conn)
        if current > len(plan):  # a newer sqlmem made it meanwhile
            raise SchemaTooNewError(
                f"{path}: schema version {current} is newer than this sqlmem knows "
                f"(latest {len(plan)})"
            )
        if current != 0:
            conn.execute("COMMIT")
            return 0
        _refuse_foreign_file(conn, path)
        tokenizer = read_fts_tokenizer(conn) or tokenizer  # none yet: the config's
        if not _TOKENIZER_SPEC.match(tokenizer):
            raise MigrationError(f"{path}: refusing tokenizer spec {tokenizer!r}")
        conn.execute(_CREATE_LEDGER)
        applied_at = now_ms()
        for migration in plan:
            conn.execute(migration.sql.replace("{tokenizer}", tokenizer))
            conn.execute(
                _INSERT_APPLIED, (migration.version, migration.name, migration.sha256, applied_at)
            )
        # PRAGMA cannot take a bound parameter; the version is an int from our own plan.
        conn.execute(f"PRAGMA user_version = {int(plan[-1].version)}")
        conn.execute("COMMIT")
        return len(plan)
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _refuse_foreign_file(conn: apsw.Connection, path: Path) -> None:
    """A SQLite file with tables but no sqlmem version belongs to someone else."""
    foreign = conn.execute(
        "SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' LIMIT 1"
    ).get
    if foreign is not None:
        raise MigrationError(
            f"{path}: not a sqlmem database (it has tables, e.g. {foreign!r}, but no sqlmem "
            "schema version); refusing to change it"
        )


def _verify_checksums(conn: apsw.Connection, path: Path, applied: tuple[Migration, ...]) -> None:
    try:
        recorded = {row[0]: (row[1], row[2]) for row in conn.execute(_SELECT_APPLIED)}
    except apsw.SQLError:
        raise MigrationError(
            f"{path}: not a sqlmem database (user_version is set but there is no "
            "schema_version table); refusing to change it"
        ) from None
    for migration in applied:
        entry = recorded.get(migration.version)
        if entry is None:
            raise MigrationError(
                f"{path}: schema_version has no row for version {migration.version} "
                "(the file was not made by sqlmem's migrations)"
            )
        if entry[1] != migration.sha256:
            raise MigrationChecksumError(
                f"{path}: migration {migration.name} was changed after it was applied "
                f"(recorded sha256 {entry[1][:12]}…, file {migration.sha256[:12]}…)"
            )
