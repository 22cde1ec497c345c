"""`stats()`, `check()`, `vacuum()`, `maintain()` of one agent's memory on PostgreSQL.

The same result shapes as `MemoryDB`'s where they mean something here; what differs, and
why:
- `stats()`: the same counts and `schema_version`, for the agent's rows; no file, WAL or
  page numbers (the server owns its storage): `agent_id` and `database_bytes` (the whole
  shared database, `pg_database_size`) instead.
- `check()`: SQLite's `integrity_check` is the server's business (checksums, amcheck);
  what sqlmem itself keeps redundant is checked instead, for this agent: the BM25
  statistics (`corpus_stats`) against the rows they count, each session's counters
  against its messages, each document's size and blocks against its content. A report
  of the same shape (`path` names the agent); healthy: `ok` and no problems.
- `vacuum()`: deletes the expired facts, then runs PostgreSQL's `VACUUM (ANALYZE)` on
  sqlmem's tables, so the space of deleted rows is reused and the planner's statistics
  are fresh. Not SQLite's guarantee that no byte of deleted text remains: that needs
  `VACUUM FULL`, which rewrites each table under an exclusive lock and so stops every
  agent of the database; an operator decides that, not one agent's call. VACUUM cannot
  run in a transaction, so inside `atomic()` it is refused.
- `maintain()`: expires facts (the rest of SQLite's maintenance, FTS merges and WAL
  checkpoints, has no counterpart: autovacuum does the server's share). Returns
  `{"expired_facts": n}`.
- `checkpoint()` and `backup()` are not offered: the server's WAL is its own, and a
  backup of the shared database is `pg_dump`'s or `pg_basebackup`'s.
Every statement names the agent except VACUUM, which is maintenance of the shared tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import SqlmemError
from ..rules.doc_blocks import split_blocks
from ..rules.documents import utf8_size
from ..rules.encoding import now_ms
from . import corpus_sql, facts_sql, history_sql
from .codec import decode
from .docs_sql import DOCUMENTS
from .errors import translate
from .migrations import latest_version

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["VACUUM", "CheckReport", "check", "refuse_in_atomic", "stats", "vacuum"]

#: sqlmem's tables on PostgreSQL (the ledger excepted), in one VACUUM (PostgreSQL 11+).
VACUUM = (
    "VACUUM (ANALYZE) sessions, messages, message_vectors, facts, fact_vectors, corpus_stats,"
    " documents,"
    " document_revisions, document_blocks"
)

_STATS = f"""
SELECT
    (SELECT count(*) FROM sessions AS s WHERE s.agent_id = %(agent)s AND {history_sql.LISTED}),
    (SELECT coalesce(sum(last_seq - archived_seq - holes), 0) FROM sessions
     WHERE agent_id = %(agent)s),
    (SELECT count(*) FROM messages WHERE agent_id = %(agent)s),
    (SELECT count(*) FROM facts AS f WHERE f.agent_id = %(agent)s AND {facts_sql.LIVE}),
    (SELECT count(*) FROM facts AS f WHERE f.agent_id = %(agent)s AND {facts_sql.UNEXPIRED}
     AND NOT EXISTS (SELECT 1 FROM fact_vectors AS v
                     WHERE v.agent_id = f.agent_id AND v.fact_pk = f.pk
                       AND (%(model)s::text IS NULL OR v.model = %(model)s))),
    (SELECT count(*) FROM documents WHERE agent_id = %(agent)s),
    (SELECT count(*) FROM messages AS m WHERE m.agent_id = %(agent)s AND m.content <> ''
     AND NOT EXISTS (SELECT 1 FROM message_vectors AS v
                     WHERE v.agent_id = m.agent_id AND v.session_id = m.session_id
                       AND v.seq = m.seq AND (%(model)s::text IS NULL OR v.model = %(model)s))),
    (SELECT max(version) FROM sqlmem_schema_version),
    pg_database_size(current_database())
"""

#: (corpus, kept docs, kept tokens, real docs, real tokens) of the three corpora.
_CORPORA = f"""
SELECT c.corpus, coalesce(s.docs, 0), coalesce(s.tokens, 0), c.docs, c.tokens
FROM (
    SELECT {corpus_sql.FACTS}, count(*), coalesce(sum(doc_len), 0) FROM facts
    WHERE agent_id = %(agent)s
    UNION ALL
    SELECT {corpus_sql.MESSAGES}, count(*), coalesce(sum(doc_len), 0) FROM messages
    WHERE agent_id = %(agent)s
    UNION ALL
    SELECT {DOCUMENTS}, count(*), coalesce(sum(doc_len), 0) FROM document_blocks
    WHERE agent_id = %(agent)s
) AS c(corpus, docs, tokens)
LEFT JOIN corpus_stats AS s ON s.agent_id = %(agent)s AND s.corpus = c.corpus
ORDER BY c.corpus
"""
#: Sessions whose counters disagree with their messages.
_SESSIONS = """
SELECT s.session_id, s.last_seq, s.archived_seq, s.holes, m.top, m.active
FROM sessions AS s
LEFT JOIN LATERAL (
    SELECT max(seq) AS top, count(*) FILTER (WHERE seq > s.archived_seq) AS active
    FROM messages WHERE agent_id = s.agent_id AND session_id = s.session_id
) AS m ON true
WHERE s.agent_id = %(agent)s
  AND (coalesce(m.top, 0) > s.last_seq OR s.archived_seq > s.last_seq
       OR m.active != s.last_seq - s.archived_seq - s.holes)
"""
_DOCUMENTS = """
SELECT d.path, d.size, d.content,
       (SELECT array_agg(ARRAY[b.start_line, b.end_line] ORDER BY b.start_line)
        FROM document_blocks AS b WHERE b.agent_id = d.agent_id AND b.path = d.path),
       (SELECT array_agg(b.text ORDER BY b.start_line)
        FROM document_blocks AS b WHERE b.agent_id = d.agent_id AND b.path = d.path),
       (SELECT count(*) FROM document_revisions AS r
        WHERE r.agent_id = d.agent_id AND r.path = d.path AND r.revision >= d.revision)
FROM documents AS d WHERE d.agent_id = %(agent)s ORDER BY d.path
"""
_CORPUS_NAMES = {corpus_sql.FACTS: "facts", corpus_sql.MESSAGES: "messages", DOCUMENTS: "documents"}


@dataclass
class CheckReport:
    """What `check()` found; `ok` is True when the agent's rows agree with each other.
    `path` names what was checked (the agent), as the SQLite report names its file."""

    path: str
    ok: bool
    problems: list[str] = field(default_factory=list)


def stats(engine: Engine, model: str | None) -> dict[str, Any]:
    """The agent's counts, the schema version and the shared database's size."""
    params = {"agent": engine.agent_id, "now": now_ms(), "model": model}
    with engine.snapshot() as conn:
        row = conn.execute(_STATS, params).fetchone()
    assert row is not None
    sessions, active, messages, facts, without, documents, messages_without, version, size = row
    return {
        "agent_id": engine.agent_id,
        "schema_version": int(version or 0),
        "sessions": int(sessions),
        "messages_active": int(active),
        "messages_archived": int(messages) - int(active),
        "facts": int(facts),
        # Rows waiting for embed_pending: none without an embedder (as on SQLite).
        "facts_without_vectors": int(without) if model is not None else 0,
        "messages_without_vectors": int(messages_without) if model is not None else 0,
        "documents": int(documents),
        "database_bytes": int(size),
    }


def check(engine: Engine) -> CheckReport:
    """The agent's redundant data against its source, in one snapshot."""
    problems: list[str] = []
    params = {"agent": engine.agent_id}
    with engine.snapshot() as conn:
        version = conn.execute("SELECT max(version) FROM sqlmem_schema_version").fetchone()
        corpora = conn.execute(_CORPORA, params).fetchall()
        sessions = conn.execute(_SESSIONS, params).fetchall()
        documents = conn.execute(_DOCUMENTS, params).fetchall()
    if version is None or version[0] != latest_version():
        problems.append(f"schema version {version and version[0]}, expected {latest_version()}")
    for corpus, kept_docs, kept_tokens, docs, tokens in corpora:
        if (kept_docs, kept_tokens) != (docs, tokens):
            problems.append(
                f"search statistics of {_CORPUS_NAMES[corpus]}: {kept_docs} rows and "
                f"{kept_tokens} tokens counted, {docs} and {tokens} stored"
            )
    for session, last, archived, holes, top, active in sessions:
        problems.append(
            f"session {decode(session)!r}: counters last_seq={last} archived_seq={archived} "
            f"holes={holes} disagree with its messages (highest seq {top}, {active} active)"
        )
    for path, size, content, lines, texts, ahead in documents:
        text = decode(content)
        stored = [(a, b, decode(t)) for (a, b), t in zip(lines or [], texts or [], strict=True)]
        if stored != [tuple(b) for b in split_blocks(text)]:
            problems.append(f"document {path!r}: its search blocks do not match its content")
        if size != utf8_size(text):
            problems.append(f"document {path!r}: size {size} but {utf8_size(text)} bytes")
        if ahead:
            problems.append(f"document {path!r}: a kept revision is not older than the current")
    return CheckReport(f"postgresql agent {engine.agent_id}", not problems, problems)


def refuse_in_atomic(engine: Engine, what: str) -> None:
    if engine.in_atomic:
        raise SqlmemError(f"{what} cannot run inside atomic(): VACUUM runs outside transactions")


def vacuum(engine: Engine) -> None:
    """VACUUM (ANALYZE) sqlmem's tables (see the module's docstring); the caller expired
    the facts first."""
    refuse_in_atomic(engine, "vacuum()")
    with engine.read() as conn, translate(f"PostgreSQL agent {engine.agent_id}"):
        conn.execute(VACUUM)
