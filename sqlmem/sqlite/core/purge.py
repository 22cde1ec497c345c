"""Purging a session in bounded chunks, so other writers are never held for long.

`purge()` of a 500,000-message session was one 16-second transaction, and writers to other
sessions failed with `StorageBusyError` meanwhile. Now a session of more than
`PURGE_CHUNK_ROWS` messages is detached in one small transaction (its `session_id` becomes
a BLOB, which no read binding text can name, so it is gone for every read at once and its
id is free for a new session), then its rows are deleted a chunk per write transaction
(history_sql's purge notes). What a crash leaves is invisible, and finished by the next
`purge()` or `MemoryDB.vacuum()`: never at open, which a read-only command must be able to
do without writing.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

import apsw

from ...rules.encoding import now_ms
from ..stores import history_sql as sql
from .engine import Engine

__all__ = ["PURGE_CHUNK_ROWS", "finish_purges", "purge_session"]

#: Messages deleted per write transaction by a purge: a session of at most this many goes
#: in one transaction, a larger one in chunks of this size (history_sql's purge notes).
#: 500 rows of 30-90 words held the writer ~35 ms (median), ~0.3 s at most with the
#: checkpoints commits run, in a file of 500,000 messages.
PURGE_CHUNK_ROWS = 500
#: The pause after each chunk, as a share of the time the chunk held the writer.
PURGE_PAUSE_SHARE = 1.0
_jitter = random.Random()


def purge_session(engine: Engine, session_id: str) -> None:
    """Remove the session (see `SQLiteHistoryStore.purge`); returns once every row of it,
    and of any session an earlier purge left detached, is deleted."""
    with engine.write() as conn:
        state: Sequence[Sequence[Any]] = conn.execute(sql.SELECT_SESSION, (session_id,)).fetchall()
        if state:
            pk, last = state[0][0], state[0][1]
            if last <= PURGE_CHUNK_ROWS:
                conn.execute(sql.PURGE, (pk,))
            else:
                conn.execute(sql.DETACH_SESSION, (pk, now_ms()))
        pending = bool(conn.execute(sql.DETACHED_SESSION).fetchall())
    if pending:
        finish_purges(engine)


def finish_purges(engine: Engine) -> None:
    """Delete the rows of detached sessions (`purge`), one bounded chunk per transaction.

    Run by `purge` and `MemoryDB.vacuum`, so a purge interrupted by a crash is finished by
    the next one; never at open, which a read-only command must be able to do without
    writing. Between chunks the writer is left free for about as long as the chunk held
    it (jittered): a writer of another process polls the lock (SQLite's busy handler
    sleeps between tries) and must find it free within its busy timeout, so chunks must
    not follow each other back to back. The price is the purge's own time: 500,000
    messages took ~89 s against ~24 s in one transaction (FTS5 flushes and merges per
    commit, and the pauses), while a writer to another session never waited more than
    ~0.35 s (it failed 11 times in 194 with a 2 s busy timeout before).
    """
    while True:
        started = time.monotonic()
        with engine.write() as conn:
            if not _delete_chunk(conn):
                return
        _pause(time.monotonic() - started)


def _pause(held: float) -> None:
    """Leave the writer free after a chunk that held it for `held` seconds."""
    time.sleep(held * PURGE_PAUSE_SHARE * (0.5 + _jitter.random()))


def _delete_chunk(conn: apsw.Connection) -> bool:
    """One chunk of the first detached session (its row once it is empty); False when no
    session is detached."""
    found: Sequence[Sequence[Any]] = conn.execute(sql.DETACHED_SESSION).fetchall()
    if not found:
        return False
    pk = found[0][0]
    conn.execute(sql.DELETE_CHUNK, (pk, PURGE_CHUNK_ROWS))
    if conn.changes() < PURGE_CHUNK_ROWS:
        conn.execute(sql.DROP_DETACHED, (pk,))
    return True
