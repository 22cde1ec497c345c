"""Forgetting that is real: after delete/purge and `vacuum()`, no byte of the text is left.

The bytes of the database file and its WAL are searched for unique secrets, placed in
every column a user writes (content, ids, tags, source, category, metadata, session ids,
summaries, tool calls), in enough rows that the FTS index has several segments and the
tables many pages. What delete/purge alone promise is pinned too: nothing is returned or
found, and the index stays consistent, although the bytes may still be on disk.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

import sqlmem
from sqlmem import Fact, Message, ToolCall

OpenDB = Callable[..., sqlmem.MemoryDB]


def _secret() -> str:
    # Letters then digits: one token for unicode61, left alone by the Porter stemmer.
    return "zq" + secrets.token_hex(6) + "7"


def _raw_bytes(db: sqlmem.MemoryDB) -> bytes:
    data = b""
    for suffix in ("", "-wal"):
        file = Path(f"{db.path}{suffix}")
        if file.exists():
            data += file.read_bytes()
    return data


def _leaks(db: sqlmem.MemoryDB, words: list[str]) -> list[str]:
    data = _raw_bytes(db)
    return [w for w in words if w.encode() in data]


class Secrets:
    """A database with many facts and messages, some of them holding secrets."""

    def __init__(self, db: sqlmem.MemoryDB, n_facts: int = 1500, n_sessions: int = 6) -> None:
        self.db = db
        self.fact_secrets: dict[str, list[str]] = {}  # fact id -> secrets in it
        self.session_secrets: dict[str, list[str]] = {}
        self.kept_facts: dict[str, str] = {}  # id -> a word only it has
        self.kept_messages: list[str] = []
        facts: list[Fact] = []
        for i in range(n_facts):
            if i % 3 == 0:
                words = [_secret() for _ in range(6)]
                fid = f"id-{words[0]}"
                facts.append(
                    Fact(
                        id=fid,
                        content=f"the code is {words[1]} and more text {i}",
                        source=f"src-{words[2]}",
                        tags=[f"tag-{words[3]}", "common"],
                        category=f"cat/{words[4]}",
                        metadata={"k": words[5]},
                    )
                )
                self.fact_secrets[fid] = words
            else:
                word = f"keep{i}x7"
                facts.append(Fact(id=f"keep-{i}", content=f"ordinary {word} text", tags=["t"]))
                self.kept_facts[f"keep-{i}"] = word
        # Batches of varied size: each statement leaves its own FTS5 segment.
        start, size = 0, 1
        while start < len(facts):
            db.facts.index_many(facts[start : start + size])
            start += size
            size = size * 2 if size < 256 else 1
        for s in range(n_sessions):
            words = [_secret() for _ in range(5)]
            sid = f"chat-{words[0]}"
            self.session_secrets[sid] = words
            batch = [
                Message(role="user", content=f"my password is {words[1]} number {k}")
                for k in range(40)
            ]
            batch.append(
                Message(
                    role="assistant",
                    content="calling",
                    tool_calls=[ToolCall(id="c1", name="lookup", arguments=f'"{words[2]}"')],
                )
            )
            batch.append(Message(role="tool", tool_call_id="c1", content="ok", name=words[3]))
            for k in range(0, len(batch), 7):
                db.history.append_many(sid, batch[k : k + 7])
            db.history.compact(sid, keep_last=5, summary=f"summary {words[4]}")
            kept = f"stays{s}x7"
            db.history.append(f"keep-{s}", Message(role="user", content=f"hello {kept}"))
            self.kept_messages.append(kept)

    @property
    def all_secrets(self) -> list[str]:
        found = [w for ws in self.fact_secrets.values() for w in ws]
        return found + [w for ws in self.session_secrets.values() for w in ws]

    def forget(self) -> None:
        ids = list(self.fact_secrets)
        for fid in ids[: len(ids) // 2]:
            self.db.facts.delete(fid)
        assert self.db.facts.delete_many(ids[len(ids) // 2 :]) == len(ids) - len(ids) // 2
        for sid in self.session_secrets:
            self.db.history.purge(sid)

    def assert_forgotten_logically(self) -> None:
        """What delete/purge promise by themselves: nothing is returned or found again."""
        db = self.db
        for fid, words in self.fact_secrets.items():
            assert db.facts.get(fid) is None
            for w in words:
                assert db.facts.search(w) == []
                assert db.history.search(w) == []
        assert (
            db.facts.search_by_metadata("k", self.fact_secrets[next(iter(self.fact_secrets))][5])
            == []
        )
        assert not any(t.startswith("tag-") for t in db.facts.tags())
        for sid, words in self.session_secrets.items():
            assert db.history.get_all(sid, include_archived=True) == []
            assert db.history.get_summary(sid) == ""
            assert sid not in db.history.sessions()
            for w in words:
                assert db.history.search(w) == []
        report = db.check()
        assert report.ok, report.problems

    def assert_kept(self) -> None:
        db = self.db
        assert db.facts.count() == len(self.kept_facts)
        for fid, word in list(self.kept_facts.items())[::50]:
            hits = db.facts.search(word)
            assert [f.id for f in hits] == [fid]
        for word in self.kept_messages:
            assert len(db.history.search(word)) == 1


def test_vacuum_leaves_no_byte_of_deleted_facts_or_purged_sessions(open_db: OpenDB) -> None:
    db = open_db()
    data = Secrets(db)
    db.checkpoint()  # the secrets are now in the main file, not only in the WAL
    with db._engine.write() as conn:  # stat4 samples hold index keys (ids, tags, sources)
        conn.execute("ANALYZE")
    assert len(_leaks(db, data.all_secrets)) == len(data.all_secrets)
    segments = _fts_segments(db)
    assert segments["facts_fts"] > 1, segments  # several segments to merge

    data.forget()
    data.assert_forgotten_logically()
    data.assert_kept()

    db.vacuum()
    assert _leaks(db, data.all_secrets) == []
    assert db.stats()["wal_bytes"] == 0
    assert db.stats()["free_pages"] == 0
    data.assert_forgotten_logically()
    data.assert_kept()


def test_delete_alone_leaves_bytes_behind(open_db: OpenDB) -> None:
    """Documents why vacuum() exists: delete/purge are logical, not physical."""
    db = open_db()
    data = Secrets(db, n_facts=300, n_sessions=2)
    data.forget()
    data.assert_forgotten_logically()
    db.checkpoint()
    assert _leaks(db, data.all_secrets), "delete became physical: update the docs"


def test_vacuum_while_another_reader_holds_a_snapshot(open_db: OpenDB) -> None:
    """A reader's snapshot pins the old pages: vacuum must not claim success then."""
    db = open_db(busy_timeout_ms=300)
    data = Secrets(db, n_facts=300, n_sessions=2)
    data.forget()
    reader = apsw.Connection(str(db.path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM facts").fetchall()  # the snapshot is taken
        started = time.monotonic()
        with pytest.raises(sqlmem.StorageBusyError, match="reader"):
            db.vacuum()
        assert time.monotonic() - started < 3
        # The reader still sees its snapshot, undisturbed.
        row: Any = reader.execute("SELECT count(*) FROM facts").fetchall()[0]
        assert row[0] > 0
        with pytest.raises(sqlmem.StorageBusyError, match="reader"):
            db.checkpoint()
    finally:
        reader.execute("ROLLBACK")
        reader.close()
    db.vacuum()  # the reader is gone: now it completes
    assert _leaks(db, data.all_secrets) == []
    data.assert_forgotten_logically()
    data.assert_kept()


def test_vacuum_with_idle_readers_and_a_reader_that_lets_go(open_db: OpenDB) -> None:
    """Readers that end their snapshot within the busy timeout do not make vacuum fail."""
    db = open_db(busy_timeout_ms=5000)
    data = Secrets(db, n_facts=300, n_sessions=2)
    idle = apsw.Connection(str(db.path))  # open, no transaction: does not pin anything
    reader = apsw.Connection(str(db.path))
    try:
        idle.execute("SELECT count(*) FROM facts").fetchall()
        data.forget()
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM facts").fetchall()
        timer = threading.Timer(0.3, lambda: reader.execute("COMMIT"))
        timer.start()
        db.vacuum()  # waits for the reader, within the busy timeout
        timer.join()
    finally:
        idle.close()
        reader.close()
    assert _leaks(db, data.all_secrets) == []
    data.assert_kept()


def test_vacuum_blocked_by_a_writer_is_storage_busy(open_db: OpenDB) -> None:
    db = open_db(busy_timeout_ms=200)
    db.facts.index(Fact(content="x"))
    other = apsw.Connection(str(db.path))
    other.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(sqlmem.StorageBusyError):
            db.vacuum()
        assert time.monotonic() - started < 1.5
    finally:
        other.execute("ROLLBACK")
        other.close()
    db.vacuum()
    assert db.check().ok


def _fts_segments(db: sqlmem.MemoryDB) -> dict[str, int]:
    out = {}
    with db._engine.read() as conn:
        for table in ("facts_fts", "messages_fts"):
            # %_idx has one row per (segment, leaf-page range): count the segments.
            rows: Any = conn.execute(f"SELECT count(DISTINCT segid) FROM {table}_idx").fetchall()
            out[table] = int(rows[0][0])
    return out


def test_vacuum_leaves_no_byte_of_a_forgotten_messages_vector(tmp_path: Path) -> None:
    """Message vectors go with their messages: pop and purge delete them, and `vacuum()`
    leaves no byte of them in the file or its WAL, while the kept messages' stay."""
    from datetime import datetime, timezone

    from sqlmem.embedders import HashEmbedder
    from sqlmem.rules.history_modes import vector_text
    from sqlmem.search.vectors import checked_rows

    embedder = HashEmbedder(64)
    said = datetime(2026, 3, 14, tzinfo=timezone.utc)

    def blob(text: str) -> bytes:
        """The stored vector of a message of `text` (of its text after its day)."""
        (vector,) = checked_rows(embedder.embed([vector_text(text, "", said)]), 1)
        assert vector is not None
        return vector.astype("<f4").tobytes()

    def said_by_user(text: str) -> Message:
        return Message(role="user", content=text, created_at=said)

    popped, purged = [f"{_secret()} {_secret()}" for _ in range(2)]
    kept = [f"{_secret()} stays" for _ in range(3)]
    with sqlmem.open(tmp_path / "m.db", embedder=embedder) as db:
        db.history.append_many("keep", [said_by_user(t) for t in kept])
        db.history.append("keep", said_by_user(popped))
        db.history.append_many("gone", [said_by_user(purged)] * 2)
        db.checkpoint()
        data = _raw_bytes(db)
        assert all(blob(t) in data for t in [popped, purged, *kept])
        assert db.history.pop("keep") is not None
        db.history.purge("gone")
        db.vacuum()
        data = _raw_bytes(db)
        assert blob(popped) not in data and blob(purged) not in data
        assert all(blob(t) in data for t in kept)
        assert len(db.history.search("stays", mode="vector", top_k=10)) == 3
        assert db.check().ok
