"""Purging a huge session (issue 23 item 8): one transaction for 500,000 messages held the
writer ~20 s, and writers to other sessions failed with StorageBusyError after their busy
timeout. Now the session is detached in one small transaction (gone for every read at
once) and its rows deleted in chunks, each its own write transaction; a crash between
chunks leaves nothing visible, and the next purge or vacuum finishes the work.

The chunk size is monkeypatched small (10 rows) so that a few hundred messages need many
chunks; the pause between chunks (`history._pause`) is where the tests look in.
"""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

import sqlmem
from sqlmem import Message
from sqlmem.sqlite.core import purge as history
from sqlmem.sqlite.transfer.export import export_records

OpenDB = Callable[..., sqlmem.MemoryDB]
CHUNK = 10
BIG = 205  # messages: 21 chunks of 10


def _secret() -> str:
    return "zq" + secrets.token_hex(6) + "7"  # one token for unicode61 and Porter


def _fill(db: sqlmem.MemoryDB, big_id: str, words: list[str]) -> None:
    """`big_id` with BIG messages (some archived, a summary), "other" with three."""
    db.history.append_many(
        big_id,
        [Message(role="user", content=f"wombat {words[i % len(words)]} {i}") for i in range(BIG)],
    )
    db.history.compact(big_id, keep_last=50, summary=f"summary {words[0]}")
    db.history.append_many(
        "other", [Message(role="user", content=f"wombat other {i}") for i in range(3)]
    )


def _raw(db: sqlmem.MemoryDB, query: str) -> Any:
    """Looks past the API at the file: what is physically still there."""
    conn = apsw.Connection(str(db.path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(query).fetchall()[0][0]
    finally:
        conn.close()


def _leaks(db: sqlmem.MemoryDB, words: list[str]) -> list[str]:
    data = b""
    for suffix in ("", "-wal"):
        file = Path(f"{db.path}{suffix}")
        if file.exists():
            data += file.read_bytes()
    return [w for w in words if w.encode() in data]


def _assert_gone(db: sqlmem.MemoryDB, big_id: str, words: list[str]) -> None:
    """Every read sees no trace of the purged session (it may have started anew)."""
    assert all(m.content.startswith("new") for m in db.history.get_all(big_id))
    assert all(
        m.content.startswith("new") for m in db.history.get_all(big_id, include_archived=True)
    )
    assert db.history.get_summary(big_id) == ""
    for word in words:
        assert db.history.search(word) == []
        assert db.history.search(word, session_id=big_id) == []
    exported = json.dumps(list(export_records(db)))
    assert not any(w in exported for w in words)


def test_a_chunked_purge_leaves_nothing_and_lets_other_writers_in(
    open_db: OpenDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23 item 8 (a): many chunks, each its own transaction; between two of them
    another thread writes, the session is already invisible to every read, and a new
    session of the same id starts at seq 1."""
    monkeypatch.setattr(history, "PURGE_CHUNK_ROWS", CHUNK)
    db = open_db()
    words = [_secret() for _ in range(5)]
    _fill(db, "big", words)
    pauses: list[float] = []
    seen_between: list[Any] = []

    def pause(held: float) -> None:
        pauses.append(held)
        if len(pauses) != 3:
            return
        # Mid-purge: the writer is free (another thread gets it at once) ...
        done = threading.Event()
        worker = threading.Thread(
            target=lambda: (
                db.history.append("other", Message(role="user", content="wombat between")),
                done.set(),
            )
        )
        worker.start()
        worker.join(timeout=10)
        assert done.is_set(), "the purge kept the writer between chunks"
        # ... the session is gone for every read, search included (its FTS entries are
        # still there: the top 4 must still be the 4 live matches) ...
        assert db.history.get_all("big") == [] and db.history.count("big") == 0
        assert "big" not in db.history.sessions()
        hits = db.history.search("wombat", top_k=4)
        assert sorted(m.content for m in hits) == [
            "wombat between",
            "wombat other 0",
            "wombat other 1",
            "wombat other 2",
        ]
        _assert_gone(db, "big", words)
        # ... and the id is free again.
        seen_between.append(db.history.append("big", Message(role="user", content="new one")))
        seen_between.append(_raw(db, "SELECT count(*) FROM messages"))

    monkeypatch.setattr(history, "_pause", pause)
    db.history.purge("big")

    assert len(pauses) >= BIG // CHUNK  # one pause per chunk: each its own transaction
    assert seen_between[0] == 1
    assert 3 + 1 < seen_between[1] < 3 + BIG  # rows were still there, partly deleted
    assert [m.content for m in db.history.get_all("big")] == ["new one"]
    assert db.history.sessions() == ["big", "other"]
    assert [m.content for m in db.history.get_all("other")][-1] == "wombat between"
    _assert_gone(db, "big", words)
    assert _raw(db, "SELECT count(*) FROM messages") == 3 + 1 + 1
    assert _raw(db, "SELECT count(*) FROM sessions WHERE typeof(session_id) != 'text'") == 0
    assert db.stats()["sessions"] == 2
    assert db.check().ok


def test_a_small_purge_is_one_transaction(open_db: OpenDB, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23 item 8: sessions of at most a chunk keep the one-transaction purge."""
    monkeypatch.setattr(history, "PURGE_CHUNK_ROWS", CHUNK)
    pauses: list[float] = []
    monkeypatch.setattr(history, "_pause", pauses.append)
    db = open_db()
    db.history.append_many("s", [Message(role="user", content=f"m{i}") for i in range(CHUNK)])
    db.history.purge("s")
    db.history.purge("never there")
    assert pauses == [] and db.history.sessions() == []
    assert _raw(db, "SELECT count(*) FROM sessions") == 0


# The child: purges with chunks of 10 and SIGKILLs itself inside the 4th chunk's
# transaction, after its DELETE ran and before it committed.
_CHILD = """
import os, signal, sys
import sqlmem
from sqlmem.sqlite.core import purge as history
history.PURGE_CHUNK_ROWS = 10
chunks = 0
real = history._delete_chunk
def dying(conn):
    global chunks
    done = real(conn)
    chunks += 1
    if chunks == 4:
        os.kill(os.getpid(), signal.SIGKILL)
    return done
history._delete_chunk = dying
db = sqlmem.open(sys.argv[1])
db.history.purge(sys.argv[2])
"""


@pytest.mark.parametrize("resume", ["purge", "vacuum"])
def test_a_purge_killed_between_chunks_stays_invisible_and_is_finished_later(
    open_db: OpenDB, tmp_path: Path, resume: str
) -> None:
    """Issue 23 item 8 (b): SIGKILL in the middle of a chunked purge. The session is gone
    for every read, a plain open and reads do not write, and the next purge (of any
    session) or vacuum deletes the rest; vacuum then leaves no byte of it."""
    path = tmp_path / "memory.db"
    big_id = "big-" + _secret()
    words = [_secret() for _ in range(5)]
    with sqlmem.open(path) as db:
        _fill(db, big_id, words)
        db.history.append("doomed", Message(role="user", content="short"))
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), big_id],
        capture_output=True,
        timeout=60,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()

    db = open_db(path)
    left = _raw(db, "SELECT count(*) FROM messages")
    assert 3 + 1 < left < 3 + 1 + BIG  # three chunks committed, the fourth rolled back
    assert _raw(db, "SELECT count(*) FROM sessions WHERE typeof(session_id) = 'blob'") == 1
    assert big_id not in db.history.sessions() and db.history.count(big_id) == 0
    _assert_gone(db, big_id, words)
    assert db.check().ok
    assert db.history.append(big_id, Message(role="user", content="new start")) == 1
    assert _raw(db, "SELECT count(*) FROM messages") == left + 1  # reads deleted nothing

    if resume == "purge":
        db.history.purge("doomed")
    else:
        db.vacuum()
    assert _raw(db, "SELECT count(*) FROM messages") == 3 + (1 if resume == "vacuum" else 0) + 1
    assert _raw(db, "SELECT count(*) FROM sessions WHERE typeof(session_id) = 'blob'") == 0
    assert [m.content for m in db.history.get_all(big_id)] == ["new start"]
    _assert_gone(db, big_id, words)
    assert db.check().ok
    if resume == "purge":
        db.vacuum()
    assert _leaks(db, words) == []
