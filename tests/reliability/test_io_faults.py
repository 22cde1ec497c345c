"""I/O faults: every public call succeeds or raises a sqlmem error, and nothing is lost.

A pass-through VFS (`faultvfs.FaultVFS`, registered as the process default for the length
of a test, so sqlmem needs no VFS parameter) fails the Nth xWrite / xSync / xRead /
xTruncate after arming with SQLITE_IOERR or SQLITE_FULL, once (a transient glitch) or
from then on (a disk that stays full). For every (operation x fault) we assert:

- the call returns normally or raises a `SqlmemError` (never an apsw error), with the
  apsw error as `__cause__` when it failed;
- once the fault clears, on the SAME `MemoryDB` object: data committed before is intact,
  a failed write left all or nothing, new writes and reads work, `check()` is ok;
- at the end of each group, after closing: stdlib `sqlite3` says `integrity_check` ok,
  and a reopened database holds the same data and accepts writes.

Budget: the whole matrix runs in well under 30 s on 2 cores.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
import pytest

import sqlmem
from sqlmem import Fact, Message, SqlmemError

sys.path.insert(0, str(Path(__file__).parent))
from faultvfs import KINDS, OPS, FaultVFS

#: Fault positions: the Nth call after arming fails.
POSITIONS = (1, 2, 3, 5, 8)


@pytest.fixture
def vfs(tmp_path: Path) -> Iterator[FaultVFS]:
    faulty = FaultVFS(str(tmp_path))
    try:
        yield faulty
    finally:
        faulty.close()


# -- the state every trial must leave intact -----------------------------------------------


@dataclass
class Baseline:
    """What was committed before the faults; checked after every trial."""

    messages: list[tuple[str, str]] = field(default_factory=list)
    summary: str = "the summary that must survive"
    facts: dict[str, str] = field(default_factory=dict)


def _msg(text: str, role: str = "user") -> Message:
    return Message(role=role, content=text)  # type: ignore[arg-type]


def _seed(db: sqlmem.MemoryDB) -> Baseline:
    base = Baseline()
    msgs = [
        _msg(f"kept message {i} about apples", "user" if i % 2 else "assistant") for i in range(12)
    ]
    db.history.append_many("keep", msgs)
    db.history.set_summary("keep", base.summary)
    base.messages = [(m.role, m.content) for m in msgs]
    facts = [
        Fact(id=f"keep-{i}", content=f"kept fact {i} about pears " + "x" * 300) for i in range(20)
    ]
    db.facts.index_many(facts)
    base.facts = {f.id: f.content for f in facts}
    return base


def _assert_baseline(db: sqlmem.MemoryDB, base: Baseline) -> None:
    got = [(m.role, m.content) for m in db.history.get_all("keep", include_archived=True)]
    assert got == base.messages
    assert db.history.get_summary("keep") == base.summary
    for fid, content in base.facts.items():
        fact = db.facts.get(fid)
        assert fact is not None and fact.content == content, fid
    assert {f.id for f in db.facts.search("pears", top_k=100)} >= set(base.facts)


def _prepare_scratch(db: sqlmem.MemoryDB) -> None:
    """Give the operation under test something to work on (faults cleared)."""
    if db.history.count("scratch") < 6:
        db.history.append_many("scratch", [_msg(f"scratch {i} bananas") for i in range(10)])
    if db.facts.get("scratch-del") is None:
        db.facts.index(Fact(id="scratch-del", content="a fact to delete"))
    db.history.purge("doomed")
    db.history.append_many("doomed", [_msg("doomed words") for _ in range(3)])


# -- the operations under test -----------------------------------------------------------

_BIG = "lorem ipsum dolor " * 400  # several pages, so writes spill over page boundaries


def _check_atomic_scratch(db: sqlmem.MemoryDB, before: int) -> None:
    after = db.history.count("scratch")
    assert after in (before, before + 5), (before, after)


OPERATIONS: dict[str, Callable[[sqlmem.MemoryDB, Path], Any]] = {
    "append": lambda db, _: db.history.append("scratch", _msg(_BIG)),
    "append_many": lambda db, _: db.history.append_many(
        "scratch", [_msg(f"{_BIG} {i}") for i in range(5)]
    ),
    "compact": lambda db, _: db.history.compact("scratch", 2, summary="compacted " + _BIG),
    "purge": lambda db, _: db.history.purge("doomed"),
    "set_summary": lambda db, _: db.history.set_summary("scratch", "summary " + _BIG),
    "index": lambda db, _: db.facts.index(Fact(id="scratch-1", content="new fact " + _BIG)),
    "index_many": lambda db, _: db.facts.index_many(
        [Fact(id=f"scratch-m{i}", content=f"batch {i} {_BIG}") for i in range(5)]
    ),
    "delete": lambda db, _: db.facts.delete("scratch-del"),
    "search_facts": lambda db, _: db.facts.search("pears kept", top_k=5),
    "search_history": lambda db, _: db.history.search("apples", top_k=5),
    "get_recent": lambda db, _: db.history.get_recent("keep", 5),
    "checkpoint": lambda db, _: db.checkpoint(),
    "vacuum": lambda db, _: db.vacuum(),
    "backup": lambda db, tmp: _backup_afresh(db, tmp / "backups" / "copy.db"),
    "stats": lambda db, _: db.stats(),
    "check": lambda db, _: db.check(),
}


def _backup_afresh(db: sqlmem.MemoryDB, dest: Path) -> Path:
    """backup() never replaces a file (issue 23 item 11): remove the previous trial's."""
    dest.unlink(missing_ok=True)
    return db.backup(dest)


@dataclass
class Tally:
    trials: int = 0
    fired: int = 0
    raised: int = 0
    errors: dict[str, int] = field(default_factory=dict)


def _assert_sqlmem_error(exc: BaseException, what: str) -> None:
    assert isinstance(exc, SqlmemError), (
        f"{what}: {type(exc).__module__}.{type(exc).__name__}: {exc}"
    )
    assert not isinstance(exc, apsw.Error)
    assert isinstance(exc.__cause__, apsw.Error), f"{what}: no apsw cause: {exc!r}"


def _probe_writes(db: sqlmem.MemoryDB, n: int) -> None:
    """Writes and reads work again on this object."""
    seq = db.history.append("probe", _msg(f"probe {n} cherries"))
    assert db.history.get_recent("probe", 1)[0].content == f"probe {n} cherries"
    assert seq == db.history.count("probe") + 0 or seq >= 1
    db.facts.index(Fact(id=f"probe-{n}", content=f"probe fact {n} cherries"))
    assert db.facts.get(f"probe-{n}") is not None


def _plain_integrity(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        for table in ("messages_fts", "facts_fts"):
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
        conn.rollback()
    finally:
        conn.close()


def _run_group(
    vfs: FaultVFS, path: Path, tmp: Path, name: str, config: sqlmem.StoreConfig, tally: Tally
) -> None:
    operation = OPERATIONS[name]
    db = sqlmem.open(path, config)
    try:
        base = _seed(db) if db.history.count("keep") == 0 else None
        if base is None:  # reopened: rebuild the expected state from the first seeding
            base = _GROUP_BASE[path]
        _GROUP_BASE[path] = base
        probe = 0
        for op in OPS:
            for kind in KINDS:
                for nth in POSITIONS:
                    for sticky in (True, False):
                        _prepare_scratch(db)
                        before = db.history.count("scratch")
                        tally.trials += 1
                        vfs.arm(op, kind, nth, sticky=sticky)
                        try:
                            operation(db, tmp)
                        except BaseException as exc:
                            _assert_sqlmem_error(exc, f"{name} {op}/{kind}#{nth}")
                            tally.raised += 1
                            key = type(exc).__name__
                            tally.errors[key] = tally.errors.get(key, 0) + 1
                        finally:
                            tally.fired += bool(vfs.disarm())
                        where = f"{name} after {op}/{kind}#{nth} sticky={sticky}"
                        try:
                            _assert_baseline(db, base)
                            if name == "append_many":
                                _check_atomic_scratch(db, before)
                            probe += 1
                            _probe_writes(db, probe)
                        except Exception as exc:
                            raise AssertionError(f"{where}: {type(exc).__name__}: {exc}") from exc
                if name in ("checkpoint", "vacuum", "check"):
                    report = db.check()
                    assert report.ok, (name, op, kind, report.problems)
        report = db.check()
        assert report.ok, report.problems
    finally:
        db.close()
    _plain_integrity(path)
    with sqlmem.open(path, config) as again:
        _assert_baseline(again, base)
        _probe_writes(again, 10_000)
        assert again.check().ok


_GROUP_BASE: dict[Path, Baseline] = {}


@pytest.mark.parametrize("synchronous", ["NORMAL", "FULL"])
@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_every_call_survives_io_faults(
    vfs: FaultVFS, tmp_path: Path, name: str, synchronous: str
) -> None:
    tally = Tally()
    _run_group(
        vfs,
        tmp_path / f"{name}.db",
        tmp_path,
        name,
        sqlmem.StoreConfig(synchronous=synchronous),
        tally,
    )
    # The matrix must actually hit faults, or it proves nothing.
    assert tally.fired > 0, tally
    _TALLIES[(name, synchronous)] = tally


_TALLIES: dict[tuple[str, str], Tally] = {}


def test_backup_when_the_disk_stays_full(vfs: FaultVFS, tmp_path: Path) -> None:
    """Regression: step() failed, then finish() inside apsw's Backup.__exit__ failed again
    (the fault persisted) and apsw raised SystemError, which no sqlmem error wraps."""
    with sqlmem.open(tmp_path / "memory.db") as db:
        db.facts.index(Fact(content="x" * 20_000))
        for nth in range(1, 6):
            vfs.arm("sync", "ioerr", nth, sticky=True)
            try:
                _backup_afresh(db, tmp_path / "backups" / "copy.db")
            except BaseException as exc:
                _assert_sqlmem_error(exc, f"backup sync#{nth}")
                # issue 23 item 11: a failed backup leaves no file (nor temp file) behind.
                assert not (tmp_path / "backups" / "copy.db").exists()
                assert not list((tmp_path / "backups").glob(".sqlmem-backup-*"))
            finally:
                vfs.disarm()
        _backup_afresh(db, tmp_path / "backups" / "copy.db")
    with sqlmem.open(tmp_path / "backups" / "copy.db") as copy:
        assert copy.facts.count() == 1


def _close_under_fault(db: sqlmem.MemoryDB, what: str) -> None:
    """close() may report the fault, as a sqlmem error, but the object ends up closed."""
    try:
        db.close()
    except BaseException as exc:
        _assert_sqlmem_error(exc, what)
    assert db.closed
    with pytest.raises(sqlmem.StoreClosedError):
        db.history.count("keep")
    db.close()  # idempotent, and quiet the second time


# -- opening and closing under faults --------------------------------------------------


@pytest.mark.parametrize("existing", [False, True])
def test_open_under_faults_fails_cleanly_and_leaves_the_file_usable(
    vfs: FaultVFS, tmp_path: Path, existing: bool
) -> None:
    opened = 0
    failed = 0
    for op in OPS:
        for kind in KINDS:
            for nth in (1, 2, 4, 8, 16):
                path = tmp_path / f"open-{op}-{kind}-{nth}.db"
                if existing:
                    with sqlmem.open(path) as db:
                        db.facts.index(Fact(id="f", content="survivor"))
                vfs.arm(op, kind, nth)
                try:
                    db = sqlmem.open(path)
                except BaseException as exc:
                    _assert_sqlmem_error(exc, f"open {op}/{kind}#{nth}")
                    failed += 1
                else:
                    opened += 1
                    _close_under_fault(db, f"close {op}/{kind}#{nth}")
                finally:
                    vfs.disarm()
                with sqlmem.open(path) as db:
                    assert db.check().ok
                    if existing:
                        fact = db.facts.get("f")
                        assert fact is not None and fact.content == "survivor"
                    db.facts.index(Fact(id="g", content="after the fault"))
                _plain_integrity(path)
    assert failed > 0 and opened > 0, (failed, opened)


def test_close_under_faults_closes_and_the_file_reopens(vfs: FaultVFS, tmp_path: Path) -> None:
    for op in OPS:
        for kind in KINDS:
            path = tmp_path / f"close-{op}-{kind}.db"
            db = sqlmem.open(path)
            base = _seed(db)
            db.history.get_recent("keep", 3)  # a reader connection is open too
            vfs.arm(op, kind, 1)
            try:
                _close_under_fault(db, f"close {op}/{kind}")
            finally:
                vfs.disarm()
            _plain_integrity(path)
            with sqlmem.open(path) as again:
                _assert_baseline(again, base)
                assert again.check().ok
