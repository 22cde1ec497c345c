"""Maintenance of one database file: `check()`, `checkpoint()` and `vacuum()`.

`MemoryDB`'s methods of those names call these; their docstrings state the promises,
the functions here how they are kept. Each takes the database's engine, and runs on a
reader (check), or on the write connection outside any transaction (checkpoint, vacuum).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import apsw

from ...errors import CorruptDatabaseError, SqlmemError, StorageBusyError
from ...rules.encoding import now_ms
from ..apsw_errors import translate_errors
from ..stores.facts_sql import EXPIRE
from ..stores.fts_names import FTS_TABLES
from .backup import copy_into
from .connection import connect
from .engine import Engine
from .purge import finish_purges

__all__ = ["CheckReport", "check", "checkpoint", "maintain", "vacuum"]


_CHECKPOINT_FULL = "PRAGMA wal_checkpoint(FULL)"
_CHECKPOINT_TRUNCATE = "PRAGMA wal_checkpoint(TRUNCATE)"

_HAS_STAT4 = "SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_stat4'"


@dataclass(frozen=True)
class CheckReport:
    """What `MemoryDB.check()` found; `ok` is True for a healthy file."""

    path: str
    ok: bool
    problems: list[str] = field(default_factory=list)


def check(engine: Engine) -> CheckReport:
    """SQLite's integrity_check plus FTS5's integrity-check of every FTS table.

    Takes no write lock, so writers (threads, other processes) go on meanwhile; see
    `_fts_problems` for how, and what it costs.
    """
    path = str(engine.path)
    problems: list[str] = []
    try:
        rows = _integrity_check(engine)
    except CorruptDatabaseError as exc:  # damaged beyond what the pragma can list
        return CheckReport(path, False, [str(exc.__cause__ or exc)])
    if rows != ["ok"]:
        problems.extend(str(r) for r in rows)
    problems.extend(_fts_problems(engine))
    return CheckReport(path, not problems, problems)


def _fts_problems(engine: Engine) -> list[str]:
    """FTS5's 'integrity-check' with rank 1, run on a private copy of the database.

    Why a copy: the check is an INSERT into the FTS table, and SQLite takes the
    file's write lock for any INSERT (inside a read transaction too; a read-only or
    query_only connection refuses it), and holds it for the whole check: 2 s at 500k
    messages, so a writer with a shorter busy timeout failed. `PRAGMA integrity_check`
    (FTS5-aware since SQLite 3.44) does not replace it: for external-content tables
    it checks the index alone, not against the content, and misses an index out of
    step with its rows. The copy is SQLite's backup into a private temporary file
    (SQLite's temp folder, deleted on close): a WAL reader's snapshot, no lock that
    a writer waits for. Costs temporary space the size of the file and a copy
    (measured: 0.12 s for 70 MB, the 0.6 s FTS check itself unchanged).
    """
    copy = copy_into(engine, "", str(engine.path))
    problems: list[str] = []
    try:
        with translate_errors(str(engine.path)):
            copy.pragma("trusted_schema", "OFF")  # its views are the file's, not ours
        for table in FTS_TABLES:
            try:
                with translate_errors(f"{engine.path}: {table}"):
                    # rank 1: also compare the index with the content it was built from.
                    copy.execute(
                        f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)"
                    )
            except SqlmemError as exc:
                problems.append(f"{table}: {exc.__cause__ or exc}")
    finally:
        copy.close()
    return problems


def _integrity_check(engine: Engine) -> list[str]:
    """PRAGMA integrity_check on a connection of its own, opened for it.

    Since SQLite 3.44 the pragma also checks FTS5 tables, with the FTS5 structure the
    connection cached earlier and without refreshing it: on a pooled reader, after the
    writer merged segments, a healthy file was reported as 'fts5: corruption found
    reading blob' (tests/reliability/test_bad_files.py pins it). A new connection has
    nothing cached; it is a WAL reader, so writers do not wait for the check.
    """
    with engine.long_read():  # StoreClosedError once closed; keeps the engine open
        conn = connect(engine.path, engine.config, read_only=engine.read_only)
        try:
            with translate_errors(str(engine.path)):
                conn.pragma("query_only", "ON")
                return [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
        finally:
            conn.close()


def checkpoint(engine: Engine) -> tuple[int, int]:
    """`MemoryDB.checkpoint`: TRUNCATE on the write connection, see `_truncate_wal`."""
    with engine.writer_connection() as conn:
        return _truncate_wal(engine, conn, "checkpoint")


def vacuum(engine: Engine) -> None:
    """`MemoryDB.vacuum`: delete expired facts, finish interrupted purges, merge every
    FTS5 index, re-sample statistics, rebuild the file, then empty the WAL (why each:
    `MemoryDB.vacuum`)."""
    engine.refuse_maintenance_if_read_only()  # before finish_purges writes
    with engine.write() as conn:  # expired facts first: their bytes go too
        conn.execute(EXPIRE, {"now": now_ms()})
    finish_purges(engine)
    with engine.writer_connection() as conn:
        for table in FTS_TABLES:
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        if conn.execute(_HAS_STAT4).fetchall():
            conn.execute("ANALYZE")
        conn.execute("VACUUM")
        _truncate_wal(engine, conn, "vacuum")


def maintain(engine: Engine) -> dict[str, Any]:
    """`MemoryDB.maintain`: the periodic care of a live file, cheaper than `vacuum` (no
    rebuild): delete expired facts, finish interrupted purges, merge each FTS5 index into
    one segment ('optimize': after bulk appends, unfiltered history search measured about
    2x faster once merged), then checkpoint. Each step is its own short transaction, so
    agents using the file wait for one step at most."""
    engine.refuse_maintenance_if_read_only()
    with engine.write() as conn:
        conn.execute(EXPIRE, {"now": now_ms()})
        expired = int(conn.changes())
    finish_purges(engine)
    for table in FTS_TABLES:
        with engine.write() as conn:
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
    frames, copied = checkpoint(engine)
    return {
        "expired_facts": expired,
        "optimized": list(FTS_TABLES),
        "wal_frames": frames,
        "checkpointed": copied,
    }


def _truncate_wal(engine: Engine, conn: apsw.Connection, what: str) -> tuple[int, int]:
    """FULL (which copies every frame and reports how many), then TRUNCATE (which empties
    the file), retried until the busy timeout; returns FULL's (frames, copied) as SQLite
    reports them.

    FULL waits, as TRUNCATE would, for the writer and for readers of older snapshots; it
    reports (busy, frames in the WAL, frames copied), where TRUNCATE, having emptied the
    WAL, reports (0, 0, 0). On success the two counts agree: a shortfall is busy, retried.

    SQLite calls the busy handler while a checkpoint waits for readers or for the
    write lock, but not for the checkpoint lock itself: while another connection (a
    process's `checkpoint()`, its WAL hook) checkpoints, ours returns "busy" at once.
    So we retry with backoff; each try gets only what is left of the busy timeout, so
    the whole call never waits much longer than it.
    """
    timeout_ms = engine.config.busy_timeout_ms
    deadline = time.monotonic() + timeout_ms / 1000
    delay = 0.001
    while True:
        left_ms = max(0, int((deadline - time.monotonic()) * 1000))
        conn.set_busy_timeout(left_ms)
        try:
            full: Any = conn.execute(_CHECKPOINT_FULL).fetchall()[0]
            busy = bool(full[0])
            if not busy:  # TRUNCATE waits only for what is left of the timeout
                conn.set_busy_timeout(max(0, int((deadline - time.monotonic()) * 1000)))
                busy = bool(conn.execute(_CHECKPOINT_TRUNCATE).fetchall()[0][0])
        except apsw.BusyError:
            busy = True
        finally:
            conn.set_busy_timeout(timeout_ms)
        if not busy:
            # Both -1 when the file is not in WAL mode.
            return max(0, int(full[1])), max(0, int(full[2]))
        left = deadline - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(delay, left))
        delay = min(delay * 2, 0.05)
    done = (
        "the rebuild is committed; call checkpoint() to finish"
        if what == "vacuum"
        else ("call it again once it has finished")
    )
    raise StorageBusyError(
        f"{engine.path}: {what} could not finish within the busy timeout: another "
        "connection (a reader holding an old snapshot, a writer, or another process's "
        f"checkpoint) kept using the WAL; {done}"
    )
