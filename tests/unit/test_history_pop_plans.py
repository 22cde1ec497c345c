"""Query plans of history 0.2's statements (pop, around, compaction around holes,
`sqlmem sessions`): index range scans of UNIQUE(session, seq), never a scan of messages
or a sort, with and without ANALYZE statistics, on a file of many sessions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem import Message
from sqlmem.sqlite.stores import history_sql as sql


@pytest.fixture(scope="module", params=[False, True], ids=["fresh", "analyzed"])
def db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    path: Path = tmp_path_factory.mktemp("pop-plans") / "memory.db"
    with sqlmem.open(path) as db:
        for s in range(40):
            db.history.append_many(
                f"s{s}", [Message(role="user", content=f"m {i}") for i in range(50)]
            )
            db.history.pop(f"s{s}")
        if request.param:
            with db.engine.write() as conn:
                conn.execute("ANALYZE")
        yield db


def plan(db: Any, query: str, args: tuple[object, ...]) -> list[str]:
    with db.engine.read() as conn:
        return [str(row[3]) for row in conn.execute("EXPLAIN QUERY PLAN " + query, args)]


UNIQUE = "sqlite_autoindex_messages_1"


@pytest.mark.parametrize(
    ("name", "args", "wanted"),
    [
        ("POP", (1, 0), f"USING COVERING INDEX {UNIQUE} (session=? AND seq>?)"),
        ("AROUND", ("s1", 10, 3, 3), f"USING INDEX {UNIQUE} (session=? AND seq<?)"),
        ("OLDEST_KEPT", (1, 0, 5), f"USING COVERING INDEX {UNIQUE} (session=? AND seq>?)"),
        ("COUNT_RANGE", (1, 0, 20), f"{UNIQUE} (session=? AND seq>? AND seq<?)"),
    ],
)  # fmt: skip
def test_history_statements_are_index_range_scans(
    db: Any, name: str, args: tuple[object, ...], wanted: str
) -> None:
    lines = plan(db, getattr(sql, name), args)
    assert any(wanted in line for line in lines), lines
    assert not any(line.startswith("SCAN messages") or line == "SCAN m" for line in lines), lines
    assert not any("TEMP B-TREE" in line for line in lines), lines


def test_around_reads_both_sides_by_index(db: Any) -> None:
    lines = plan(db, sql.AROUND, ("s1", 10, 3, 3))
    assert sum(UNIQUE in line for line in lines) == 2, lines
    assert not any(line.startswith("SCAN m") for line in lines), lines


def test_session_stats_reads_each_session_by_index(db: Any) -> None:
    lines = plan(db, sql.SESSION_STATS, ())
    assert not any(line.startswith("SCAN messages") for line in lines), lines
    assert any(f"COVERING INDEX {UNIQUE} (session=? AND seq<?)" in line for line in lines), lines
