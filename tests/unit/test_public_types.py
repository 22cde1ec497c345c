"""What a user's type checker sees of `sqlmem`: the openers' results and the lazy names
(a name missing from the type-checking imports was `object` to mypy)."""

from __future__ import annotations

from pathlib import Path

from mypy import api

USER_CODE = """
from pathlib import Path

import sqlmem
import sqlmem.aio


def sync(p: Path, s: str) -> None:
    reveal_type(sqlmem.open(p))
    reveal_type(sqlmem.open(":memory:"))
    reveal_type(sqlmem.open(s))
    reveal_type(sqlmem.open(s, agent_id="bot"))
    reveal_type(sqlmem.build_memory_pack)
    reveal_type(sqlmem.MemoryFactory(p).resolve("a"))
    database: sqlmem.Database = sqlmem.open(p)


async def awaited() -> None:
    adb = await sqlmem.aio.open(":memory:")
    reveal_type(await sqlmem.aio.build_memory_pack(adb.facts, "q"))
"""

EXPECTED = [
    'Revealed type is "sqlmem.sqlite.db.MemoryDB"',
    'Revealed type is "sqlmem.inmemory.db.InMemoryDB"',
    'Revealed type is "sqlmem.sqlite.db.MemoryDB | sqlmem.inmemory.db.InMemoryDB"',
    'Revealed type is "sqlmem.protocols.Database"',
    "-> sqlmem.context.pack.MemoryPack",
    'Revealed type is "sqlmem.protocols.Database | None"',
    'Revealed type is "sqlmem.context.pack.MemoryPack"',
]


def test_a_strict_type_checker_sees_the_real_types(tmp_path: Path) -> None:
    source = tmp_path / "user_code.py"
    source.write_text(USER_CODE, encoding="utf-8")
    out, err, _status = api.run(  # notes make the status 1
        ["--strict", "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", str(source)]
    )
    notes = [line for line in out.splitlines() if "note:" in line]
    errors = [line for line in out.splitlines() if "error:" in line]
    assert errors == [], out + err
    assert len(notes) == len(EXPECTED)
    for note, expected in zip(notes, EXPECTED, strict=True):
        assert expected in note
