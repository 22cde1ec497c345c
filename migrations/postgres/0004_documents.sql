-- sqlmem on PostgreSQL, version 4: workspace documents (SPEC 14, 19).
--
-- The SQLite file's model (migrations/0004_documents.sql there), keyed by agent_id first
-- like every table here (Citus: distributed by agent_id and co-located with the others;
-- the foreign keys include agent_id, so they stay on one shard):
-- * documents: each path's current content and flags. Paths are ASCII (SPEC 14), stored
--   as they are; contents through the NUL escaping of sqlmem.postgres.codec. Sizes are
--   the UTF-8 byte counts of the contents as given.
-- * document_revisions: the previous contents, pruned to StoreConfig.doc_revisions in the
--   transaction that adds one; gone with their document.
-- * document_blocks: the content cut into blocks (runs of non-blank lines, the same rule
--   as every backend: sqlmem.rules.doc_blocks) with their line numbers, each block's
--   tokens as a tsvector built by sqlmem (as messages and facts) and their count. An edit
--   replaces only the blocks around the change and moves the ones after it. BM25's
--   N and mean length are corpus_stats' corpus 3 (every block of the agent counts, as in
--   FTS5 and the in-memory twin); its row is also the lock that orders an agent's
--   document writers.

CREATE TABLE documents (
    agent_id   text COLLATE "C" NOT NULL,
    path       text COLLATE "C" NOT NULL,
    enabled    boolean NOT NULL,
    sort_order bigint NOT NULL,
    revision   bigint NOT NULL,
    size       bigint NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    content    text NOT NULL,
    PRIMARY KEY (agent_id, path)
);

CREATE TABLE document_revisions (
    agent_id   text COLLATE "C" NOT NULL,
    path       text COLLATE "C" NOT NULL,
    revision   bigint NOT NULL,
    size       bigint NOT NULL,
    updated_at bigint NOT NULL,
    content    text NOT NULL,
    PRIMARY KEY (agent_id, path, revision),
    FOREIGN KEY (agent_id, path) REFERENCES documents (agent_id, path) ON DELETE CASCADE
);

CREATE TABLE document_blocks (
    agent_id   text COLLATE "C" NOT NULL,
    path       text COLLATE "C" NOT NULL,
    start_line integer NOT NULL,
    end_line   integer NOT NULL,
    text       text NOT NULL,
    doc_len    integer NOT NULL,
    tsv        tsvector NOT NULL,
    -- Checked at the end of each statement, not row by row: an edit that adds or removes
    -- lines moves the blocks after it in one UPDATE (start_line + delta), whose rows
    -- pass each other's old numbers on the way.
    PRIMARY KEY (agent_id, path, start_line) DEFERRABLE INITIALLY IMMEDIATE,
    FOREIGN KEY (agent_id, path) REFERENCES documents (agent_id, path) ON DELETE CASCADE
);

-- As in version 1: GIN on (agent_id, tsv) with btree_gin, else on tsv alone.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS btree_gin;
    CREATE INDEX document_blocks_search ON document_blocks USING gin (agent_id, tsv);
EXCEPTION WHEN OTHERS THEN
    CREATE INDEX document_blocks_search ON document_blocks USING gin (tsv);
END
$$;
