"""SQL text of the PostgreSQL message vectors (migrations/postgres/0005_message_vectors.sql):
constants only, every value bound, every statement naming one agent."""

from __future__ import annotations

from .history_sql import MESSAGE_COLUMNS

__all__ = [
    "CANDIDATES_ALL",
    "CANDIDATES_SESSION",
    "FILL_ONE",
    "INSERT_BATCH",
    "PENDING_PAGE",
    "ROWS_BY_KEYS",
    "STORED_BY_HASH",
    "WITHOUT_VECTORS",
]

_SET = """
ON CONFLICT (agent_id, session_id, seq) DO UPDATE SET model = excluded.model,
    dim = excluded.dim, content_hash = excluded.content_hash, vector = excluded.vector
"""

#: An append's vectors in one statement, in the append's transaction, right after it:
#: the batch's seqs are `first` + the positions of the messages that got a vector.
INSERT_BATCH = (
    """
INSERT INTO message_vectors (agent_id, session_id, seq, model, dim, content_hash, vector)
SELECT %(agent)s, %(session)s, %(first)s + v.i, %(model)s, v.dim, v.hash, v.vector
FROM unnest(%(offsets)s::bigint[], %(dims)s::integer[], %(hashes)s::text[],
            %(vectors)s::bytea[]) AS v(i, dim, hash, vector)"""
    + _SET
)

#: embed_pending's write: only if the message still holds the text that was embedded.
FILL_ONE = (
    """
INSERT INTO message_vectors (agent_id, session_id, seq, model, dim, content_hash, vector)
SELECT agent_id, session_id, seq, %(model)s, %(dim)s, %(hash)s, %(vector)s FROM messages
WHERE agent_id = %(agent)s AND session_id = %(session)s AND seq = %(seq)s
    AND content = %(content)s"""
    + _SET
)

#: Vectors already stored for these texts (the embedding cache), by content hash.
STORED_BY_HASH = """
SELECT DISTINCT ON (content_hash) content_hash, vector FROM message_vectors
WHERE agent_id = %(agent)s AND content_hash = ANY(%(hashes)s::text[]) AND model = %(model)s
"""

_MISSING = """NOT EXISTS (SELECT 1 FROM message_vectors AS v
    WHERE v.agent_id = m.agent_id AND v.session_id = m.session_id AND v.seq = m.seq
      AND (%(model)s::text IS NULL OR v.model = %(model)s))"""

#: Messages with text but without a vector of the store's model (of any when NULL).
WITHOUT_VECTORS = f"""
SELECT count(*) FROM messages AS m
WHERE m.agent_id = %(agent)s AND m.content <> '' AND {_MISSING}
"""

#: A page of them, in (session_id, seq) order after the key `(after_session, after_seq)`.
PENDING_PAGE = f"""
SELECT m.session_id, m.seq, m.content, m.name, m.created_at FROM messages AS m
WHERE m.agent_id = %(agent)s AND (m.session_id, m.seq) > (%(after_session)s, %(after_seq)s)
    AND m.content <> '' AND {_MISSING}
ORDER BY m.session_id, m.seq LIMIT %(limit)s
"""

_CANDIDATES = """
SELECT v.session_id, v.seq, v.vector FROM message_vectors AS v
WHERE v.agent_id = %(agent)s {session} AND v.model = %(model)s AND v.dim = %(dim)s
ORDER BY v.session_id, v.seq
"""
#: (session_id, seq, vector) of the agent's messages with a vector of the query's model and
#: dimension; the session's alone when the search names one (its primary key range).
CANDIDATES_ALL = _CANDIDATES.format(session="")
CANDIDATES_SESSION = _CANDIDATES.format(session="AND v.session_id = %(session)s")

#: The ranked messages' rows.
ROWS_BY_KEYS = f"""
SELECT m.session_id, {MESSAGE_COLUMNS} FROM messages AS m
WHERE m.agent_id = %s AND (m.session_id, m.seq) IN (SELECT * FROM unnest(%s::text[], %s::bigint[]))
"""
