"""`sqlmem check` without writing: `MemoryDB.check()`'s checks, run on a private copy.

`MemoryDB.check()` compares every FTS5 index with the rows it was built from with FTS5's
'integrity-check' command (rank 1). That command is an INSERT: it takes the database's
write lock, so on the file itself `sqlmem check` would wait behind (or fail beside) a live
agent's writer, and a read-only open refuses it outright. `PRAGMA integrity_check` alone
cannot replace it: it checks an external-content FTS5 index's own structure but not that it
matches its content (a fact missing from the index passes).

So the file is copied with SQLite's backup API, which only reads it (one read snapshot;
in WAL mode the agent keeps writing meanwhile), into a temporary database of this
connection alone: SQLite unlinks its file as soon as it creates it, so no copy of the
memory is left on disk even when the process is killed. Pages are copied as they are,
damage included, and both checks then run on the copy. It costs a read of the whole file
and up to its size in temporary space (SQLite's temporary folder, e.g. $TMPDIR), in the
same order as the checks themselves.
"""

from __future__ import annotations

import apsw

from ..db import CheckReport, MemoryDB
from ..errors import CorruptDatabaseError, SqlmemError, translate_errors

__all__ = ["check_read_only"]

# rank 1: also compare each index with the content it was built from.
_CHECK_MESSAGES_FTS = "INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)"
_CHECK_FACTS_FTS = "INSERT INTO facts_fts(facts_fts, rank) VALUES ('integrity-check', 1)"


def check_read_only(db: MemoryDB) -> CheckReport:
    """What `db.check()` reports, without taking the write lock or writing the file."""
    path = str(db.path)
    try:
        copy = _private_copy(db)
    except CorruptDatabaseError as exc:  # damaged beyond what the backup can read
        return CheckReport(path, False, [str(exc.__cause__ or exc)])
    problems: list[str] = []
    try:
        try:
            with translate_errors(path):
                rows = [str(r[0]) for r in copy.execute("PRAGMA integrity_check")]
        except CorruptDatabaseError as exc:
            return CheckReport(path, False, [str(exc.__cause__ or exc)])
        if rows != ["ok"]:
            problems.extend(rows)
        for problem in (
            _fts_problem(copy, path, "messages_fts", _CHECK_MESSAGES_FTS),
            _fts_problem(copy, path, "facts_fts", _CHECK_FACTS_FTS),
        ):
            if problem is not None:
                problems.append(problem)
    finally:
        copy.close()
    return CheckReport(path, not problems, problems)


def _fts_problem(copy: apsw.Connection, path: str, table: str, statement: str) -> str | None:
    try:
        with translate_errors(path):
            copy.execute(statement)
    except SqlmemError as exc:
        return f"{table}: {exc.__cause__ or exc}"
    return None


def _private_copy(db: MemoryDB) -> apsw.Connection:
    """A temporary database ("" = private, deleted on close) holding a copy of `db`."""
    with db._engine.read() as source, translate_errors(str(db.path)):
        copy = apsw.Connection("")
        try:
            copy.pragma("trusted_schema", "OFF")  # the copy's schema is the file's
            # step then finish, not `with job:` (see MemoryDB.backup).
            job = copy.backup("main", source, "main")
            try:
                job.step(-1)
            finally:
                job.finish()
        except BaseException:
            copy.close()
            raise
    return copy
