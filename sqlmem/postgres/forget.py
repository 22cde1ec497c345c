"""`PostgresDB.forget(source)`: the SQLite database's forgetting (`sqlite.forget`) on the
agent's rows, in one transaction (`atomic()`; the plan: `rules.forget`). Statistics of the
search corpora stay exact: the stores' own deletes update them."""

from __future__ import annotations

from contextlib import AbstractContextManager
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, Protocol

from ..rules.encoding import now_ms
from ..rules.forget import (
    ForgetReport,
    ForgetSource,
    derived_only_from,
    parse_source,
    ref_needle,
    remaining_refs,
)
from . import history_sql
from .codec import decode, encode

if TYPE_CHECKING:
    from .docs import PostgresDocumentStore
    from .engine import Engine
    from .facts import PostgresFactStore
    from .history import PostgresHistoryStore

__all__ = ["forget"]


class Database(Protocol):
    """What forgetting needs of `PostgresDB`: the agent, its engine, its stores and
    `atomic()`. Declared here so this module does not import the package that imports it."""

    @property
    def agent_id(self) -> str: ...

    @property
    def _engine(self) -> Engine: ...

    @property
    def history(self) -> PostgresHistoryStore: ...

    @property
    def docs(self) -> PostgresDocumentStore: ...

    @property
    def facts(self) -> PostgresFactStore: ...

    def atomic(self) -> AbstractContextManager[None]: ...


_ARCHIVED = 2  # history_sql.SELECT_SESSION's archived_seq

_SESSION_MESSAGES = "SELECT count(*) FROM messages WHERE agent_id = %s AND session_id = %s"
_DELETE_MESSAGE = """
DELETE FROM messages WHERE agent_id = %(agent)s AND session_id = %(session)s AND seq = %(seq)s
RETURNING doc_len
"""
_REVISIONS = "SELECT count(*) FROM document_revisions WHERE agent_id = %s AND path = %s"
_DOCUMENT = "SELECT 1 FROM documents WHERE agent_id = %s AND path = %s"
_SET_REFS = "UPDATE facts SET refs = %s WHERE agent_id = %s AND id = %s"
_FACT_CANDIDATES = """
SELECT id, refs, source FROM facts
WHERE agent_id = %(agent)s AND (strpos(refs, %(needle)s) > 0 OR source = %(session)s)
"""


def forget(db: Database, source: str) -> ForgetReport:
    target = parse_source(source)
    engine, agent = db._engine, db.agent_id
    messages = documents = revisions = 0
    with db.atomic(), engine.write() as conn:
        if target.kind == "session":
            found = conn.execute(_SESSION_MESSAGES, (agent, encode(target.session))).fetchone()
            messages = int(found[0]) if found else 0
            db.history.purge(target.session)
        elif target.kind == "message":
            messages = _forget_message(conn, agent, target)
        elif conn.execute(_DOCUMENT, (agent, target.path)).fetchone() is not None:
            found = conn.execute(_REVISIONS, (agent, target.path)).fetchone()
            revisions, documents = (int(found[0]) if found else 0), 1
            db.docs.delete(target.path)
        needle = encode_basestring(ref_needle(target))[1:-1]
        params = {
            "agent": agent,
            "needle": needle,  # refs are stored as JSON text, as given
            "session": encode(target.session) if target.kind == "session" else None,
        }
        gone: list[str] = []
        for fact_id, refs, fact_source in conn.execute(_FACT_CANDIDATES, params).fetchall():
            if derived_only_from(refs, decode(fact_source), target):
                gone.append(decode(fact_id))
                continue
            kept = remaining_refs(refs, target)
            if kept is not None:
                conn.execute(_SET_REFS, (kept, agent, fact_id))
        facts = db.facts.delete_many(gone) if gone else 0
    return ForgetReport(messages, facts, documents, revisions)


def _forget_message(conn: Any, agent: str, target: ForgetSource) -> int:
    session = encode(target.session)
    conn.execute(history_sql.LOCK_CORPUS, (agent, history_sql.MESSAGES))
    params = {"agent": agent, "session": session, "seq": target.seq, "now": now_ms()}
    state = conn.execute(history_sql.SELECT_SESSION, params).fetchone()
    if state is None:
        return 0
    row = conn.execute(_DELETE_MESSAGE, params).fetchone()
    if row is None:
        return 0
    if target.seq > int(state[_ARCHIVED]):  # an active message: a hole, as after pop
        conn.execute(history_sql.POPPED, params)
    conn.execute(history_sql.UPDATE_STATS, (-1, -int(row[0]), agent, history_sql.MESSAGES))
    return 1
