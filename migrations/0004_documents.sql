-- documents: the agent's workspace files (MEMORY.md, PROFILE.md, daily notes ...) inside
-- memory.db, with the previous contents kept and block-level full-text search (SPEC 14).
--
-- Why it looks like this:
-- * documents holds the current content, keyed by its path (UNIQUE): read is one index
--   lookup. revision counts changes of content; updated_at is when it last changed.
-- * document_revisions keeps previous contents, one row per (document, revision); the
--   store prunes them to StoreConfig.doc_revisions in the transaction that adds one.
--   An ordinary rowid table, not WITHOUT ROWID: rows hold whole documents, and a
--   WITHOUT ROWID b-tree with large rows spills and splits badly.
-- * Search works on blocks (runs of non-blank lines) so a hit says where it is (lines)
--   and ranks the passage, not the whole file. document_blocks is written by the store
--   in the same transaction as the content (the split is Python's: a block's line numbers
--   and its CJK segmentation, `search_text`, are the same rules the in-memory twin uses,
--   which SQL cannot share). Only the blocks around a change are rewritten (the ones
--   after it only get new line numbers), so an edit re-indexes the passage it touched.
-- * document_blocks_fts is FTS5 with external content over coalesce(search_text, text),
--   kept in sync by triggers like the facts' index, so any SQLite client can search it.
-- * Revisions and blocks go with their document through ON DELETE CASCADE (the blocks'
--   delete trigger removes their index entries), so delete is one statement.
-- The FTS tokenizer below is substituted with the file's own when the file is migrated.

CREATE TABLE documents (
    pk          INTEGER PRIMARY KEY,
    path        TEXT    NOT NULL UNIQUE,
    enabled     INTEGER NOT NULL,
    sort_order  INTEGER NOT NULL,
    revision    INTEGER NOT NULL,
    size        INTEGER NOT NULL,              -- UTF-8 bytes of content
    created_at  INTEGER NOT NULL,              -- unix milliseconds, UTC
    updated_at  INTEGER NOT NULL,
    content     TEXT    NOT NULL               -- last: reading the flags skips it
);

CREATE TABLE document_revisions (
    pk          INTEGER PRIMARY KEY,
    document    INTEGER NOT NULL REFERENCES documents(pk) ON DELETE CASCADE,
    revision    INTEGER NOT NULL,
    size        INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,              -- when this content was written
    content     TEXT    NOT NULL,
    UNIQUE (document, revision)
);

CREATE TABLE document_blocks (
    pk          INTEGER PRIMARY KEY,
    document    INTEGER NOT NULL REFERENCES documents(pk) ON DELETE CASCADE,
    start_line  INTEGER NOT NULL,              -- lines numbered from 1
    end_line    INTEGER NOT NULL,
    text        TEXT    NOT NULL,
    search_text TEXT                           -- NULL unless text needs segmenting
);

-- The blocks touching a line range are found from this index alone (and the cascade
-- from documents uses it).
CREATE INDEX document_blocks_lines ON document_blocks(document, start_line, end_line);

CREATE VIEW document_blocks_fts_source AS
    SELECT pk, coalesce(search_text, text) AS content FROM document_blocks;

CREATE VIRTUAL TABLE document_blocks_fts USING fts5(
    content,
    content = 'document_blocks_fts_source',
    content_rowid = 'pk',
    tokenize = '{tokenizer}'
);

CREATE TRIGGER document_blocks_insert AFTER INSERT ON document_blocks BEGIN
    INSERT INTO document_blocks_fts(rowid, content)
        VALUES (new.pk, coalesce(new.search_text, new.text));
END;

CREATE TRIGGER document_blocks_delete AFTER DELETE ON document_blocks BEGIN
    INSERT INTO document_blocks_fts(document_blocks_fts, rowid, content)
        VALUES ('delete', old.pk, coalesce(old.search_text, old.text));
END;

-- Moving a block (its line numbers) does not touch the index; only new text does.
CREATE TRIGGER document_blocks_update AFTER UPDATE OF text, search_text ON document_blocks
BEGIN
    INSERT INTO document_blocks_fts(document_blocks_fts, rowid, content)
        VALUES ('delete', old.pk, coalesce(old.search_text, old.text));
    INSERT INTO document_blocks_fts(rowid, content)
        VALUES (new.pk, coalesce(new.search_text, new.text));
END;

INSERT INTO document_blocks_fts(document_blocks_fts, rank) VALUES ('pgsz', 2000);
