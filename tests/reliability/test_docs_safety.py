"""Workspace documents: forgetting that is real, folder sync that never leaves its folder,
refused paths that leave nothing, and the export that carries documents and revisions."""

from __future__ import annotations

import os
import secrets
import stat
import threading
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest

import sqlmem
from sqlmem.sqlite.transfer.export import export_records
from sqlmem.sqlite.transfer.importer import import_records

OpenDB = Callable[..., sqlmem.MemoryDB]


def _secret() -> str:
    return "zq" + secrets.token_hex(6) + "7"


def _raw(db: sqlmem.MemoryDB) -> bytes:
    data = b""
    for suffix in ("", "-wal"):
        file = Path(f"{db.path}{suffix}")
        if file.exists():
            data += file.read_bytes()
    return data


# -- forgetting -----------------------------------------------------------------------------


def test_vacuum_leaves_no_byte_of_a_deleted_document_or_its_revisions(open_db: OpenDB) -> None:
    db = open_db()
    gone: list[str] = []
    kept: list[str] = []
    for n in range(30):
        words = [_secret() for _ in range(4)]
        path = f"secret-{n}.md"
        for k, word in enumerate(words):  # three revisions and the current content
            db.docs.write(path, f"# Notes {n}\n\nthe code is {word}\n\n" + "filler line\n" * 50)
            if k == 2:
                db.docs.edit(path, "filler", f"edited {words[k]}", replace_all=True)
        gone += words
        keep = f"keep{n}x7"
        db.docs.write(f"kept-{n}.md", f"stays {keep}")
        kept.append(keep)
    assert all(w.encode() in _raw(db) for w in gone[:4])
    for n in range(30):
        db.docs.delete(f"secret-{n}.md")
    for word in gone:
        assert db.docs.search(word) == []
    assert db.check().ok
    db.vacuum()
    data = _raw(db)
    assert [w for w in gone if w.encode() in data] == []
    for n, word in enumerate(kept):
        assert [h.path for h in db.docs.search(word)] == [f"kept-{n}.md"]
    assert db.check().ok


# -- refused paths --------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["../x.md", "/tmp/x.md", "a\\b.md", ".x.md", "a//b.md", "x.txt"])
def test_a_refused_path_leaves_no_row_and_no_file(
    open_db: OpenDB, tmp_path: Path, path: str
) -> None:
    db = open_db()
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(sqlmem.InvalidArgumentError, match="document path"):
        db.docs.write(path, "x")
    with pytest.raises(sqlmem.InvalidArgumentError):
        db.docs.append(path, "x")
    with db.engine.read() as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchall()[0][0] == 0
    out = tmp_path / "out"
    assert db.docs.export_dir(out) == 0
    assert list(out.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "out"])


# -- folder sync ----------------------------------------------------------------------------


def test_export_never_follows_or_replaces_a_symlinks_target(
    open_db: OpenDB, tmp_path: Path
) -> None:
    db = open_db()
    db.docs.write("MEMORY.md", "new memory")
    db.docs.write("memory/2026-01-01.md", "note")
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "authorized_keys"
    target.write_text("precious")
    folder = tmp_path / "sync"
    folder.mkdir()
    (folder / "MEMORY.md").symlink_to(target)
    (folder / "memory").symlink_to(outside)
    with pytest.raises(sqlmem.SqlmemError, match="symlink"):
        db.docs.export_dir(folder)
    assert target.read_text() == "precious"
    assert sorted(p.name for p in outside.iterdir()) == ["authorized_keys"]
    # The file's own symlink was replaced by the file, never written through.
    assert not (folder / "MEMORY.md").is_symlink()
    assert (folder / "MEMORY.md").read_text() == "new memory"
    assert stat.S_IMODE((folder / "MEMORY.md").stat().st_mode) == 0o600
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_export_skips_a_path_another_client_stored(open_db: OpenDB, tmp_path: Path) -> None:
    """A row written by another SQLite client bypasses the path rule: export checks again."""
    db = open_db()
    db.docs.write("ok.md", "fine")
    with db.engine.write() as conn:
        for evil in ("../evil.md", "/tmp/evil.md", "a/../../evil.md"):
            conn.execute(
                "INSERT INTO documents (path, enabled, sort_order, revision, size, created_at,"
                " updated_at, content) VALUES (?, 0, 100, 1, 1, 0, 0, 'x')",
                (evil,),
            )
    folder = tmp_path / "deep" / "sync"
    assert db.docs.export_dir(folder) == 1
    assert sorted(p.name for p in folder.iterdir()) == ["ok.md"]
    assert not (tmp_path / "deep" / "evil.md").exists() and not (tmp_path / "evil.md").exists()


def test_export_replaces_files_whole(open_db: OpenDB, tmp_path: Path) -> None:
    db = open_db()
    db.docs.write("a.md", "short")
    (tmp_path / "a.md").write_text("a much longer previous content")
    assert db.docs.export_dir(tmp_path) == 1
    assert (tmp_path / "a.md").read_text() == "short"


def test_import_never_reads_through_a_symlink(open_db: OpenDB, tmp_path: Path) -> None:
    db = open_db()
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "secret.md").write_text("secret outside")
    (outside / "deep" / "x.md").write_text("deep outside")
    folder = tmp_path / "sync"
    folder.mkdir()
    (folder / "MEMORY.md").write_text("mine")
    (folder / "linked.md").symlink_to(outside / "secret.md")
    (folder / "dir").symlink_to(outside)
    (folder / "memory").mkdir()
    (folder / "memory" / "2026-01-01.md").write_text("note")
    (folder / "memory" / "up.md").symlink_to("../../outside/secret.md")
    os.mkfifo(folder / "fifo.md")  # never opened: reading it would block
    (folder / ".git").mkdir()
    (folder / ".git" / "x.md").write_text("hidden folder")
    (folder / "bad name").mkdir()
    (folder / "README.txt").write_text("other file")
    done = db.docs.import_dir(folder)
    assert done == sqlmem.DocumentImport(created=2, updated=0, unchanged=0, skipped=7)
    assert [i.path for i in db.docs.list()] == ["MEMORY.md", "memory/2026-01-01.md"]
    assert db.docs.search("outside") == [] and db.docs.search("hidden") == []


def test_import_is_one_transaction(open_db: OpenDB, tmp_path: Path) -> None:
    """A write failing halfway through the folder (simulated) leaves none of it imported."""
    db = open_db()
    for n in range(20):
        (tmp_path / f"n{n}.md").write_text(f"note {n}")
    db.docs.write("n0.md", "old")
    calls = 0
    store = db.docs.port  # the backend's port stores each file
    original = store._execute  # type: ignore[attr-defined]

    def failing(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        if calls == 10:
            raise sqlmem.SqlmemError("disk full (simulated)")
        return original(*args, **kwargs)

    store._execute = failing  # type: ignore[attr-defined]
    with pytest.raises(sqlmem.SqlmemError, match="simulated"):
        db.docs.import_dir(tmp_path)
    store._execute = original  # type: ignore[attr-defined]
    assert [i.path for i in db.docs.list()] == ["n0.md"]
    assert db.docs.read("n0.md").content == "old"  # type: ignore[union-attr]


def test_appends_from_many_threads_are_all_kept(open_db: OpenDB) -> None:
    """Each append reads and rewrites the whole document inside one write transaction, so
    concurrent appends never lose one another's line."""
    db = open_db()
    barrier = threading.Barrier(4)

    def worker(t: int) -> None:
        barrier.wait()
        for i in range(40):
            db.docs.append("HISTORY.md", f"t{t} line {i}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    doc = db.docs.read("HISTORY.md")
    assert doc is not None and doc.revision == 160
    assert sorted(doc.content.split("\n")) == sorted(
        f"t{t} line {i}" for t in range(4) for i in range(40)
    )
    assert len(db.docs.revisions("HISTORY.md")) == 50


# -- JSON Lines export and import -----------------------------------------------------------


def test_export_carries_documents_and_revisions(open_db: OpenDB, tmp_path: Path) -> None:
    src = open_db(tmp_path / "src.db")
    src.docs.write("MEMORY.md", "v1")
    src.docs.write("MEMORY.md", "v2 用户")
    src.docs.write("notes/x.md", "x", enabled=True, sort_order=-3)
    src.docs.append_daily("ran", day=date(2026, 1, 2))
    records = list(export_records(src))
    kinds = [r.get("type") for r in records[1:]]
    assert kinds == ["document"] * 3 + ["revision"]
    dst = open_db(tmp_path / "dst.db")
    counts = import_records(dst, records)
    assert (counts.documents, counts.revisions) == (3, 1)
    for store in (src, dst):
        assert store.docs.read_revision("MEMORY.md", 1) == "v1"
    assert src.docs.list() == dst.docs.list()
    assert [src.docs.read(i.path) for i in src.docs.list()] == [
        dst.docs.read(i.path) for i in dst.docs.list()
    ]
    assert [h.path for h in dst.docs.search("用户")] == ["MEMORY.md"]
    again = import_records(dst, records)
    assert (again.documents, again.revisions) == (0, 0)
    assert (again.documents_skipped, again.revisions_skipped) == (3, 1)
    assert list(export_records(dst))[1:] == records[1:]
    assert dst.check().ok


def test_an_import_of_a_newer_document_keeps_the_replaced_content(
    open_db: OpenDB, tmp_path: Path
) -> None:
    src = open_db(tmp_path / "src.db")
    for text in ("a", "b", "c"):
        src.docs.write("MEMORY.md", text)
    dst = open_db(tmp_path / "dst.db")
    dst.docs.write("MEMORY.md", "local")
    import_records(dst, list(export_records(src)))
    doc = dst.docs.read("MEMORY.md")
    assert doc is not None and (doc.content, doc.revision) == ("c", 3)
    assert dst.docs.read_revision("MEMORY.md", 1) == "local"  # kept, not lost
    assert dst.docs.read_revision("MEMORY.md", 2) == "b"
    older = open_db(tmp_path / "older.db")
    older.docs.write("MEMORY.md", "stale")
    import_records(dst, list(export_records(older)))
    assert dst.docs.read("MEMORY.md").content == "c"  # type: ignore[union-attr]


def test_bad_document_records_name_their_line(open_db: OpenDB) -> None:
    db = open_db()
    header = next(export_records(db))
    bad = [
        {"type": "document", "path": "../x.md", "content": "x", "enabled": True,
         "sort_order": 0, "revision": 1, "created_at": "2026-01-01T00:00:00+00:00",
         "updated_at": "2026-01-01T00:00:00+00:00"},
        {"type": "revision", "path": "a.md", "revision": 0, "content": "x",
         "updated_at": "2026-01-01T00:00:00+00:00"},
        {"type": "document", "path": "a.md", "content": "x", "enabled": 1,
         "sort_order": 0, "revision": 1, "created_at": "2026-01-01T00:00:00+00:00",
         "updated_at": "2026-01-01T00:00:00+00:00"},
        {"type": "revision", "path": "a.md", "revision": 1, "content": "x",
         "updated_at": "2026-01-01T00:00:00"},
    ]  # fmt: skip
    for record in bad:
        with pytest.raises(sqlmem.InvalidArgumentError, match="record 2"):
            import_records(db, [header, record])
    assert db.docs.list() == []


def test_any_sqlite_client_reads_and_searches_the_documents(open_db: OpenDB) -> None:
    """SPEC 3: built-in tokenizer, FTS kept by triggers, so the stdlib's sqlite3 (no
    sqlmem) reads the documents and searches their blocks."""
    import sqlite3

    db = open_db()
    db.docs.write("MEMORY.md", "# Memory\n\nThe dog is called Rex.\n\nLikes tea.")
    db.docs.edit("MEMORY.md", "tea", "coffee")
    db.close()
    conn = sqlite3.connect(db.path)
    try:
        rows = conn.execute(
            "SELECT d.path, b.start_line, b.text FROM document_blocks_fts AS f"
            " JOIN document_blocks AS b ON b.pk = f.rowid JOIN documents AS d"
            " ON d.pk = b.document WHERE document_blocks_fts MATCH ?",
            ("coffee",),
        ).fetchall()
        assert rows == [("MEMORY.md", 5, "Likes coffee.")]
        assert conn.execute(
            "SELECT count(*) FROM document_blocks_fts WHERE document_blocks_fts MATCH 'tea'"
        ).fetchone() == (0,)
        assert conn.execute("SELECT content FROM document_revisions").fetchall() == [
            ("# Memory\n\nThe dog is called Rex.\n\nLikes tea.",)
        ]
    finally:
        conn.close()
