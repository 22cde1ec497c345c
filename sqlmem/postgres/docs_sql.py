"""SQL text of the PostgreSQL document store (migrations/postgres/0004_documents.sql).

Constants only, every value bound, every statement naming one agent (`%(agent)s`). A path
prefix is matched with `starts_with(path, %(prefix)s)`, which holds for any prefix text
(LIKE would need escaping; paths are ASCII under COLLATE "C", so the order is Python's).
"""

from __future__ import annotations

from .corpus_sql import LOCK_CORPUS, STATS, UPDATE_STATS
from .ranking import bm25_statement

__all__ = [
    "CANDIDATES",
    "CANDIDATES_PREFIX",
    "COUNT",
    "DELETE",
    "DELETE_BLOCKS_AROUND",
    "DOCUMENTS",
    "ENABLED_CONTENTS",
    "INSERT",
    "INSERT_BLOCKS",
    "KEEP_REVISION",
    "LIST",
    "LOCK_CORPUS",
    "MEMORY_CONTEXT",
    "PRUNE_REVISIONS",
    "RANKED",
    "RANKED_PREFIX",
    "READ",
    "READ_CONTENTS",
    "READ_REVISION",
    "REVISIONS",
    "SELECT_BLOCKS",
    "SELECT_FOR_WRITE",
    "SET_ENABLED",
    "SET_SORT_ORDER",
    "SHIFT_BLOCKS",
    "STATS",
    "UPDATE_CONTENT",
    "UPDATE_FLAGS",
    "UPDATE_STATS",
]

#: corpus_stats' corpus of the document blocks (1: facts, 2: messages).
DOCUMENTS = 3

_ONE = "agent_id = %(agent)s AND path = %(path)s"

READ = (
    "SELECT path, content, enabled, sort_order, revision, created_at, updated_at, size"
    f" FROM documents WHERE {_ONE}"
)
#: What a write needs to decide, and the old content (the caller holds the corpus lock;
#: the row lock keeps a concurrent set_enabled/set_sort_order from being overwritten).
SELECT_FOR_WRITE = (
    "SELECT enabled, sort_order, revision, created_at, updated_at, size, content"
    f" FROM documents WHERE {_ONE} FOR UPDATE"
)
INSERT = (
    "INSERT INTO documents (agent_id, path, enabled, sort_order, revision, size, created_at,"
    " updated_at, content) VALUES (%(agent)s, %(path)s, %(enabled)s, %(order)s, 1, %(size)s,"
    " %(now)s, %(now)s, %(content)s)"
)
#: The current content becomes a kept revision (copied inside the server, never through
#: Python).
KEEP_REVISION = (
    "INSERT INTO document_revisions (agent_id, path, revision, size, updated_at, content)"
    f" SELECT agent_id, path, revision, size, updated_at, content FROM documents WHERE {_ONE}"
)
PRUNE_REVISIONS = f"DELETE FROM document_revisions WHERE {_ONE} AND revision < %(below)s"
UPDATE_CONTENT = (
    "UPDATE documents SET content = %(content)s, size = %(size)s, revision = revision + 1,"
    " updated_at = %(now)s, enabled = %(enabled)s, sort_order = %(order)s"
    f" WHERE {_ONE}"
)
UPDATE_FLAGS = f"UPDATE documents SET enabled = %(enabled)s, sort_order = %(order)s WHERE {_ONE}"
#: Each returns a row when the document is there.
SET_ENABLED = f"UPDATE documents SET enabled = %(enabled)s WHERE {_ONE} RETURNING 1"
SET_SORT_ORDER = f"UPDATE documents SET sort_order = %(order)s WHERE {_ONE} RETURNING 1"
#: The document, its revisions and blocks (they cascade), and the blocks' share of the
#: BM25 statistics, in one statement. Returns a row when the document existed.
DELETE = f"""
WITH gone AS (
    DELETE FROM document_blocks WHERE {_ONE} RETURNING doc_len
), stats AS (
    UPDATE corpus_stats
    SET docs = docs - (SELECT count(*) FROM gone),
        tokens = tokens - (SELECT coalesce(sum(doc_len), 0) FROM gone)
    WHERE agent_id = %(agent)s AND corpus = {DOCUMENTS}
)
DELETE FROM documents WHERE {_ONE} RETURNING 1
"""

#: The blocks touching lines `%(first)s`..`%(last)s` go (an edit's neighbourhood: a change
#: may merge or split them); returns their lines and token counts.
DELETE_BLOCKS_AROUND = f"""
DELETE FROM document_blocks
WHERE {_ONE} AND start_line <= %(last)s AND end_line >= %(first)s
RETURNING start_line, end_line, doc_len
"""
#: The blocks after a change move by its change in line count.
SHIFT_BLOCKS = f"""
UPDATE document_blocks SET start_line = start_line + %(delta)s, end_line = end_line + %(delta)s
WHERE {_ONE} AND start_line > %(after)s
"""
#: Every block of a content in one statement (arrays, one round trip).
INSERT_BLOCKS = """
INSERT INTO document_blocks (agent_id, path, start_line, end_line, text, doc_len, tsv)
SELECT %(agent)s, %(path)s, b.s, b.e, b.t, b.n, b.v::tsvector
FROM unnest(%(starts)s::integer[], %(ends)s::integer[], %(texts)s::text[],
            %(lens)s::integer[], %(tsvs)s::text[]) AS b(s, e, t, n, v)
"""

_PREFIX = "starts_with(d.path, %(prefix)s)"
LIST = (
    "SELECT d.path, d.enabled, d.sort_order, d.revision, d.created_at, d.updated_at, d.size"
    f" FROM documents AS d WHERE d.agent_id = %(agent)s AND {_PREFIX}"
    " ORDER BY d.sort_order, d.path"
)
COUNT = "SELECT count(*) FROM documents WHERE agent_id = %s"
#: (path, content) of the enabled documents in prompt order (render_files).
ENABLED_CONTENTS = (
    "SELECT path, content FROM documents WHERE agent_id = %(agent)s AND enabled"
    " ORDER BY sort_order, path"
)
#: (path, content) of every document by path (export_dir).
READ_CONTENTS = "SELECT path, content FROM documents WHERE agent_id = %(agent)s ORDER BY path"
#: The kept revisions, newest first; one row of NULLs for a document without any, none
#: for an unknown path.
REVISIONS = """
SELECT r.revision, r.size, r.updated_at
FROM documents AS d
LEFT JOIN document_revisions AS r ON r.agent_id = d.agent_id AND r.path = d.path
WHERE d.agent_id = %(agent)s AND d.path = %(path)s
ORDER BY r.revision DESC
"""
#: The document's current revision, and the content of `%(revision)s` whether it is the
#: current one or a kept one (NULL when pruned or never written).
READ_REVISION = """
SELECT d.revision,
       CASE WHEN d.revision = %(revision)s THEN d.content ELSE (
           SELECT r.content FROM document_revisions AS r
           WHERE r.agent_id = d.agent_id AND r.path = d.path AND r.revision = %(revision)s
       ) END
FROM documents AS d WHERE d.agent_id = %(agent)s AND d.path = %(path)s
"""
#: MEMORY.md and the daily notes of a range of days (ISO dates sort as text).
MEMORY_CONTEXT = (
    "SELECT path, content FROM documents WHERE agent_id = %(agent)s"
    " AND (path = 'MEMORY.md' OR (path >= %(first)s AND path <= %(last)s)) ORDER BY path"
)

# -- search -----------------------------------------------------------------------------------

_KEY = "(b.path, b.start_line)"
_RESULT = "b.path, b.start_line, b.end_line, b.text"
_KEPT_PREFIX = "starts_with(b.path, %(prefix)s)"
#: BM25 ranked inside PostgreSQL (`ranking.bm25_statement`) for queries of single lexemes;
#: ties by (path, start_line), as the twin orders them.
RANKED = bm25_statement("document_blocks", "b", _KEY, "true", _RESULT, DOCUMENTS)
RANKED_PREFIX = bm25_statement("document_blocks", "b", _KEY, _KEPT_PREFIX, _RESULT, DOCUMENTS)

_CANDIDATES = """
SELECT b.path, b.start_line, b.doc_len,
       (SELECT jsonb_object_agg(u.lexeme, u.positions) FROM unnest(b.tsv) AS u
        WHERE u.lexeme = ANY(%(lexemes)s::text[])),
       {kept}
FROM document_blocks AS b
WHERE b.agent_id = %(agent)s AND b.tsv @@ %(query)s::tsquery
"""
#: The blocks holding any query lexeme, for ranking in Python (`ranking.best`): phrases
#: (CJK runs) and long queries.
CANDIDATES = _CANDIDATES.format(kept="true")
CANDIDATES_PREFIX = _CANDIDATES.format(kept=_KEPT_PREFIX)
SELECT_BLOCKS = """
SELECT b.path, b.start_line, b.end_line, b.text FROM document_blocks AS b
WHERE b.agent_id = %s
  AND (b.path, b.start_line) IN (SELECT * FROM unnest(%s::text[], %s::integer[]))
"""
