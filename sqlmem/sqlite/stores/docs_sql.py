"""SQL text of the document store (migrations/NNNN_documents.sql): constants only.

Every value is bound. A path prefix is matched with `substr(path, 1, length(:prefix)) =
:prefix`, which holds for any prefix text (LIKE would need escaping and folds case).
"""

from __future__ import annotations

from .fts_any import any_queries
from .fts_names import DOCUMENTS_FTS

__all__ = [
    "ANY",
    "BLOCKS_AROUND",
    "DELETE",
    "DELETE_BLOCK",
    "DELETE_BLOCKS",
    "ENABLED_CONTENTS",
    "EXPORT_DOCUMENTS_PAGE",
    "EXPORT_REVISIONS_PAGE",
    "IMPORT_REVISION",
    "INSERT",
    "INSERT_BLOCK",
    "KEEP_REVISION",
    "LIST",
    "MEMORY_CONTEXT",
    "PK_AND_REVISION",
    "PRUNE_REVISIONS",
    "READ",
    "READ_CONTENTS",
    "READ_REVISION",
    "REVISIONS",
    "SEARCH",
    "SEARCH_PREFIX",
    "SELECT_FOR_WRITE",
    "SELECT_SMALL_FOR_WRITE",
    "SET_ENABLED",
    "SET_SORT_ORDER",
    "SHIFT_BLOCKS",
    "UPDATE_CONTENT",
    "UPDATE_FLAGS",
]

_PREFIX = "substr(d.path, 1, length(:prefix)) = :prefix"

READ = (
    "SELECT path, content, enabled, sort_order, revision, created_at, updated_at, size"
    " FROM documents WHERE path = :path"
)
#: What a write needs to decide, and the old content (its blocks are diffed with it).
SELECT_FOR_WRITE = (
    "SELECT pk, enabled, sort_order, revision, created_at, updated_at, size, content"
    " FROM documents WHERE path = ?"
)
#: SELECT_FOR_WRITE with the content only when it is at most ?2 bytes (NULL otherwise):
#: a small document is changed in one read under the write lock, a large one is not read
#: there at all.
SELECT_SMALL_FOR_WRITE = (
    "SELECT pk, enabled, sort_order, revision, created_at, updated_at, size,"
    " CASE WHEN size <= ?2 THEN content END FROM documents WHERE path = ?1"
)
INSERT = (
    "INSERT INTO documents (path, enabled, sort_order, revision, size, created_at,"
    " updated_at, content) VALUES (?, ?, ?, 1, ?, ?, ?, ?) RETURNING pk"
)
#: The current content becomes a kept revision (copied inside SQLite, never through Python).
KEEP_REVISION = (
    "INSERT INTO document_revisions (document, revision, size, updated_at, content)"
    " SELECT pk, revision, size, updated_at, content FROM documents WHERE pk = ?"
)
PRUNE_REVISIONS = "DELETE FROM document_revisions WHERE document = ? AND revision < ?"
UPDATE_CONTENT = (
    "UPDATE documents SET content = ?, size = ?, revision = ?, updated_at = ?,"
    " enabled = ?, sort_order = ? WHERE pk = ?"
)
UPDATE_FLAGS = "UPDATE documents SET enabled = ?, sort_order = ? WHERE pk = ?"
#: The three return a row when the document is there.
SET_ENABLED = "UPDATE documents SET enabled = :enabled WHERE path = :path RETURNING 1"
SET_SORT_ORDER = "UPDATE documents SET sort_order = :order WHERE path = :path RETURNING 1"
DELETE = "DELETE FROM documents WHERE path = :path RETURNING 1"

#: The blocks touching a line range (?2: its last line, ?3: its first): read from the
#: index document_blocks_lines alone.
BLOCKS_AROUND = (
    "SELECT pk, start_line, end_line FROM document_blocks"
    " WHERE document = ?1 AND start_line <= ?2 AND end_line >= ?3"
)
#: The blocks after a change move by its change in line count (?1).
SHIFT_BLOCKS = (
    "UPDATE document_blocks SET start_line = start_line + ?1, end_line = end_line + ?1"
    " WHERE document = ?2 AND start_line > ?3"
)
INSERT_BLOCK = (
    "INSERT INTO document_blocks (document, start_line, end_line, text, search_text)"
    " VALUES (?, ?, ?, ?, ?)"
)
DELETE_BLOCK = "DELETE FROM document_blocks WHERE pk = ?"
DELETE_BLOCKS = "DELETE FROM document_blocks WHERE pk IN (SELECT value FROM json_each(?))"

LIST = (
    "SELECT d.path, d.enabled, d.sort_order, d.revision, d.created_at, d.updated_at, d.size"
    f" FROM documents AS d WHERE {_PREFIX} ORDER BY d.sort_order, d.path"
)
#: (path, content) of the enabled documents in prompt order (render_files).
ENABLED_CONTENTS = "SELECT path, content FROM documents WHERE enabled ORDER BY sort_order, path"
#: (path, content) under a prefix, by path (export_dir, render_memory_context).
READ_CONTENTS = f"SELECT d.path, d.content FROM documents AS d WHERE {_PREFIX} ORDER BY d.path"
REVISIONS = (
    "SELECT r.revision, r.size, r.updated_at FROM document_revisions AS r"
    " WHERE r.document = ? ORDER BY r.revision DESC"
)
READ_REVISION = "SELECT content FROM document_revisions WHERE document = ? AND revision = ?"
#: The document's pk and revision, and its content when `?2` is its current revision.
PK_AND_REVISION = (
    "SELECT pk, revision, CASE WHEN revision = ?2 THEN content END FROM documents WHERE path = ?1"
)
#: MEMORY.md and the daily notes of a range of days (ISO dates sort as text).
MEMORY_CONTEXT = (
    "SELECT path, content FROM documents"
    " WHERE path = 'MEMORY.md' OR (path >= :first AND path <= :last) ORDER BY path"
)

#: Best blocks first; bm25() is lower-is-better (the store negates it).
ANY = any_queries(
    DOCUMENTS_FTS,
    "SELECT d.path, b.start_line, b.end_line, b.text, r.score FROM ({ranked}) AS r"
    " JOIN document_blocks AS b ON b.pk = r.pk JOIN documents AS d ON d.pk = b.document"
    " ORDER BY r.score",
)
SEARCH = ANY.bm25
#: With a prefix: FTS5 delivers rows in rank order and the join tests each until :limit
#: pass, so the prefix narrows the candidates before the limit (as the facts' filters).
SEARCH_PREFIX = (
    f"SELECT d.path, b.start_line, b.end_line, b.text, {DOCUMENTS_FTS}.rank"
    f" FROM {DOCUMENTS_FTS} CROSS JOIN document_blocks AS b ON b.pk = {DOCUMENTS_FTS}.rowid"
    f" CROSS JOIN documents AS d ON d.pk = b.document"
    f" WHERE {DOCUMENTS_FTS} MATCH :query AND {_PREFIX}"
    f" ORDER BY {DOCUMENTS_FTS}.rank LIMIT +:limit"  # `+`: no re-prepare (facts_sql)
)

# -- export and import (sqlite/export.py, sqlite/importer.py) -------------------------------

EXPORT_DOCUMENTS_PAGE = (
    "SELECT pk, path, content, enabled, sort_order, revision, created_at, updated_at"
    " FROM documents WHERE pk > ? ORDER BY pk LIMIT ?"
)
EXPORT_REVISIONS_PAGE = (
    "SELECT r.pk, d.path, r.revision, r.content, r.updated_at FROM document_revisions AS r"
    " JOIN documents AS d ON d.pk = r.document WHERE r.pk > ? ORDER BY r.pk LIMIT ?"
)
IMPORT_REVISION = (
    "INSERT INTO document_revisions (document, revision, size, updated_at, content)"
    " SELECT pk, ?, ?, ?, ? FROM documents WHERE path = ?"
    " ON CONFLICT (document, revision) DO NOTHING"
)
