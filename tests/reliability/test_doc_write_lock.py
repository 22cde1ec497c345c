"""A document write never holds the file's write lock long enough for another process's
writer (busy timeout 1 s) to give up: the blocks are cut before the lock is taken, and a
write that would index more than one write may is refused before anything is written
(the document is then written in parts, each append re-indexing only its blocks).

Regression: `docs.write` cut and indexed all its blocks inside one write transaction;
2.4 MB of short paragraphs held the lock 12-20 s and other processes' writers got
StorageBusyError.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sqlmem
import sqlmem.inmemory
from sqlmem import InvalidArgumentError
from sqlmem.rules.doc_index_work import BLOCK_WORK, MAX_INDEX_WORK

NEIGHBOUR = Path(__file__).with_name("doc_writer_neighbour.py")


def _paragraphs(count: int, start: int = 0) -> list[str]:
    return [f"paragraph {i} about item{i} and its notes" for i in range(start, start + count)]


def test_a_large_write_never_times_out_another_process_writer(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    sqlmem.open(path).close()
    env = dict(os.environ)
    env["PYTHONPATH"] = (
        str(Path(__file__).resolve().parents[2]) + os.pathsep + env.get("PYTHONPATH", "")
    )
    child = subprocess.Popen(
        [sys.executable, str(NEIGHBOUR), str(path), "12"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        big = "\n\n".join(_paragraphs(40_000))  # ~1.7 MB of short paragraphs
        with sqlmem.open(path) as db:
            with pytest.raises(InvalidArgumentError, match="in parts") as refused:
                db.docs.write("notes/big.md", big)
            assert "notes/big.md" in str(refused.value)
            assert db.docs.read("notes/big.md") is None  # nothing written
            part = 2_000  # blocks per part: well within one write's bound
            db.docs.write("notes/big.md", "\n\n".join(_paragraphs(part)))
            for start in range(part, 40_000, part):
                db.docs.append("notes/big.md", "\n" + "\n\n".join(_paragraphs(part, start)))
            doc = db.docs.read("notes/big.md")
            assert doc is not None and doc.content == big
            hits = db.docs.search("item39999")
            assert [(h.start_line, h.text) for h in hits] == [
                (2 * 39_999 + 1, "paragraph 39999 about item39999 and its notes")
            ]
            assert db.check().ok
        out, _ = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate(timeout=30)
    report = json.loads(out.strip().splitlines()[-1])
    print(f"\nneighbour: {report['appended']} appends, {report['busy']} busy")
    assert report["busy"] == 0 and report["appended"] > 100


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_the_bound_counts_words_and_blocks_of_what_a_write_adds(kind: str, tmp_path: Path) -> None:
    db = sqlmem.open(tmp_path / "m.db") if kind == "sqlite" else sqlmem.inmemory.open()
    try:
        docs = db.docs
        at_bound = " ".join(f"w{i}" for i in range(MAX_INDEX_WORK - BLOCK_WORK))  # one block
        docs.write("a.md", at_bound)
        with pytest.raises(InvalidArgumentError, match="at most"):
            docs.write("b.md", at_bound + " one")
        assert docs.read("b.md") is None
        docs.write("a.md", "short")  # replacing a large content is never refused
        blocks = MAX_INDEX_WORK // (BLOCK_WORK + 1)
        docs.write("c.md", "\n\n".join(["x"] * blocks))
        with pytest.raises(InvalidArgumentError):
            docs.write("d.md", "\n\n".join(["x"] * (blocks + 1)))
        docs.write("e.md", "x" * (10 * 1024 * 1024))  # one block, one word: allowed
        # appends and edits re-index only their region: never refused by the bound
        for _ in range(3):
            docs.append("c.md", "\n" + "\n\n".join(["y"] * (blocks // 2)))
        assert docs.edit("c.md", "y", "z", replace_all=True) == 3 * (blocks // 2)
        with pytest.raises(InvalidArgumentError):
            docs.restore("c.md", 4)  # a whole content again: bounded like a write
        assert docs.read("c.md").revision == 5  # type: ignore[union-attr]
    finally:
        db.close()


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_import_dir_refuses_a_file_past_the_bound_before_writing_any(
    kind: str, tmp_path: Path
) -> None:
    db = sqlmem.open(tmp_path / "m.db") if kind == "sqlite" else sqlmem.inmemory.open()
    try:
        folder = tmp_path / "in"
        folder.mkdir()
        (folder / "a.md").write_text("small")
        (folder / "b.md").write_text("\n\n".join(_paragraphs(MAX_INDEX_WORK // BLOCK_WORK)))
        with pytest.raises(InvalidArgumentError, match=r"b\.md"):
            db.docs.import_dir(folder)
        assert db.docs.list() == []  # all files or none
        (folder / "b.md").write_text("\n\n".join(_paragraphs(100)))
        done = db.docs.import_dir(folder)
        assert (done.created, done.updated) == (2, 0)
        db.docs.write("b.md", "changed")
        assert db.docs.restore("b.md", 1).revision == 3
        assert db.docs.search("item42")[0].path == "b.md"
    finally:
        db.close()
