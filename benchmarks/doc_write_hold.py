"""How long one document write holds the SQLite file's write lock, at the bound on what a
write may index (`sqlmem.rules.doc_index_work`) and for the shapes around it.

Run: `python -m benchmarks.doc_write_hold` (about 15 s). Prints, per shape, the hold of
the write lock (from entering the write transaction to its commit) for writing the
document and for replacing it with a short text, and whether a write past the bound is
refused. Fixed seeds; a file-backed WAL database in a temporary folder.
"""

from __future__ import annotations

import contextlib
import platform
import random
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw

import sqlmem
from sqlmem.rules.doc_index_work import BLOCK_WORK, MAX_INDEX_WORK


def _timed_writes(db: sqlmem.MemoryDB, holds: list[float]) -> None:
    """Record each write transaction's hold of the lock (measurement only)."""
    engine: Any = db._engine
    original = engine.write

    @contextlib.contextmanager
    def write() -> Iterator[Any]:
        started = time.perf_counter()
        with original() as conn:
            yield conn
        holds.append(time.perf_counter() - started)

    engine.write = write


def _shapes() -> dict[str, str]:
    rnd = random.Random(1)
    vocab = [f"w{i}" for i in range(200_000)]  # distinct tokens: the index's worst case

    def doc(blocks: int, words: int) -> str:
        return "\n\n".join(" ".join(rnd.choice(vocab) for _ in range(words)) for _ in range(blocks))

    most = MAX_INDEX_WORK
    return {
        "one-word blocks at the bound": doc(most // (BLOCK_WORK + 1), 1),
        "3,000 blocks at the bound": doc(3000, (most - 3000 * BLOCK_WORK) // 3000),
        "100 blocks at the bound": doc(100, (most - 100 * BLOCK_WORK) // 100),
        "1 block at the bound": doc(1, most - BLOCK_WORK),
        "10 MiB single block": "x" * (10 * 1024 * 1024),
    }


def main() -> None:
    print(
        f"Python {platform.python_version()}, apsw {apsw.apsw_version()}, SQLite "
        f"{apsw.sqlite_lib_version()} (sqlite3 module {sqlite3.sqlite_version}); WAL, "
        f"synchronous=NORMAL; bound {MAX_INDEX_WORK} (words + {BLOCK_WORK} a block)"
    )
    with tempfile.TemporaryDirectory() as folder, sqlmem.open(Path(folder) / "m.db") as db:
        holds: list[float] = []
        _timed_writes(db, holds)
        for n, (name, text) in enumerate(_shapes().items()):
            path = f"shape{n}.md"
            db.docs.write(path, text)
            written = holds[-1]
            db.docs.write(path, "short")
            print(f"{name:32s} {len(text) / 1e6:6.2f} MB  hold {written:.3f} s, "
                  f"replaced by a short text {holds[-1]:.3f} s")  # fmt: skip
        past = "\n\n".join(f"paragraph {i} about item{i}" for i in range(40_000))
        started = time.perf_counter()
        try:
            db.docs.write("past.md", past)
        except sqlmem.InvalidArgumentError:
            print(
                f"{len(past) / 1e6:.2f} MB of short paragraphs: refused in "
                f"{time.perf_counter() - started:.3f} s, before the write lock"
            )


if __name__ == "__main__":
    main()
