"""`MemoryDB.forget(source)` on SQLite: a session, a message or a document, and every fact
derived only from it, removed in one write transaction (the plan: `rules.forget`).

The derived facts are found by a scan of the facts whose stored references contain the
source's text (or, for a session, whose `source` is it), each then decided by
`rules.forget.derived_only_from`; forgetting is rare and a scan of one table is bounded
by the file. Index entries go with the rows (FTS delete triggers), vectors by cascade,
and a deleted fact's chain is relinked by the facts_chain_splice trigger. A session
larger than one purge chunk is detached in the transaction (gone for every read at once)
and its rows deleted in chunks afterwards, as `purge` does. After `vacuum()` no byte of
any of it remains in the file.
"""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import Any

import apsw

from ...rules.encoding import dumps_json, now_ms
from ...rules.forget import (
    ForgetReport,
    ForgetSource,
    derived_only_from,
    parse_source,
    ref_needle,
    remaining_refs,
)
from ..core.engine import Engine
from ..core.purge import PURGE_CHUNK_ROWS, finish_purges
from . import history_sql

__all__ = ["forget"]

_FACT_CANDIDATES = (
    "SELECT id, refs, source FROM facts WHERE instr(refs, :needle) > 0 OR source = :session"
)
_SET_REFS = "UPDATE facts SET refs = ? WHERE id = ?"
_DELETE_FACTS = "DELETE FROM facts WHERE id IN (SELECT value FROM json_each(?))"
_SESSION_MESSAGES = "SELECT count(*) FROM messages WHERE session = ?"
_DELETE_MESSAGE = "DELETE FROM messages WHERE session = ? AND seq = ?"
_HOLE = "UPDATE sessions SET holes = holes + 1, updated_at = ? WHERE pk = ?"
_DOCUMENT = (
    "SELECT pk, (SELECT count(*) FROM document_revisions WHERE document = d.pk)"
    " FROM documents AS d WHERE path = ?"
)
_DELETE_DOCUMENT = "DELETE FROM documents WHERE pk = ?"  # revisions and blocks cascade


def forget(engine: Engine, source: str) -> ForgetReport:
    target = parse_source(source)
    pending = False
    with engine.write() as conn:
        messages = documents = revisions = 0
        if target.kind == "session":
            messages, pending = _forget_session(conn, target.session)
        elif target.kind == "message":
            messages = _forget_message(conn, target)
        else:
            found: list[Any] = conn.execute(_DOCUMENT, (target.path,)).fetchall()
            if found:
                conn.execute(_DELETE_DOCUMENT, (found[0][0],))
                documents, revisions = 1, int(found[0][1])
        facts = _forget_facts(conn, target)
    if pending:
        finish_purges(engine)
    return ForgetReport(messages, facts, documents, revisions)


def _forget_session(conn: apsw.Connection, session_id: str) -> tuple[int, bool]:
    state: list[Any] = conn.execute(history_sql.SELECT_SESSION, (session_id,)).fetchall()
    if not state:
        return 0, False
    pk = state[0][0]
    counted: list[Any] = conn.execute(_SESSION_MESSAGES, (pk,)).fetchall()
    count = int(counted[0][0])
    if count <= PURGE_CHUNK_ROWS:
        conn.execute(history_sql.PURGE, (pk,))
        return count, False
    conn.execute(history_sql.DETACH_SESSION, (pk, now_ms()))
    return count, True


def _forget_message(conn: apsw.Connection, target: ForgetSource) -> int:
    state: list[Any] = conn.execute(history_sql.SELECT_SESSION, (target.session,)).fetchall()
    if not state:
        return 0
    pk, _, archived = state[0][0], state[0][1], state[0][2]
    conn.execute(_DELETE_MESSAGE, (pk, target.seq))
    if not conn.changes():
        return 0
    if target.seq > archived:  # an active message: its seq becomes a hole, as after pop
        conn.execute(_HOLE, (now_ms(), pk))
    return 1


def _forget_facts(conn: apsw.Connection, target: ForgetSource) -> int:
    needle = encode_basestring(ref_needle(target))[1:-1]  # as it reads inside stored JSON
    session = target.session if target.kind == "session" else None
    params = {"needle": needle, "session": session}
    gone: list[str] = []
    trimmed: list[tuple[str, str]] = []
    candidates: list[Any] = conn.execute(_FACT_CANDIDATES, params).fetchall()
    for fact_id, refs, fact_source in candidates:
        if derived_only_from(refs, fact_source, target):
            gone.append(str(fact_id))
        else:
            kept = remaining_refs(refs, target)
            if kept is not None:
                trimmed.append((kept, str(fact_id)))
    if gone:
        conn.execute(_DELETE_FACTS, (dumps_json(gone),))
    if trimmed:
        conn.executemany(_SET_REFS, trimmed)
    return len(gone)
