-- sqlmem on PostgreSQL, version 1: history and facts of every agent in one database.
--
-- Why this shape (issue 21, SPEC 19):
-- * Every table's key starts with agent_id, and every statement of a store call names one
--   agent_id: with Citus, each table is distributed by agent_id and co-located, so a call
--   runs on one shard. No foreign key or statement spans agents.
-- * Text that a user wrote is stored as text; PostgreSQL's text cannot hold NUL, so the
--   store escapes such values reversibly (sqlmem.postgres.codec) before they get here.
-- * Timestamps are unix milliseconds (bigint), as in the SQLite file and the export
--   format: one encoding everywhere, and no time zone conversion on the hot path.
-- * Search: `tsv` is a tsvector built by sqlmem itself from the same tokens the SQLite
--   store's FTS5 tokenizer makes (porter, unicode61, CJK segmentation), never from a
--   PostgreSQL text search configuration, so every backend finds the same rows. BM25 needs
--   each row's token count (`doc_len`) and, per agent, the number of rows and tokens:
--   `corpus_stats`, updated in the same transaction as the rows. Its row is also the
--   per-agent write lock of a corpus (taken first by every writer of it).

CREATE TABLE sessions (
    agent_id     text COLLATE "C" NOT NULL,
    session_id   text COLLATE "C" NOT NULL,
    last_seq     bigint NOT NULL DEFAULT 0,   -- the seq counter: appends take seqs here
    archived_seq bigint NOT NULL DEFAULT 0,   -- messages with seq <= archived_seq are archived
    summary      text NOT NULL DEFAULT '',
    created_at   bigint NOT NULL,
    updated_at   bigint NOT NULL,
    PRIMARY KEY (agent_id, session_id)
);

CREATE TABLE messages (
    agent_id     text COLLATE "C" NOT NULL,
    session_id   text COLLATE "C" NOT NULL,
    seq          bigint NOT NULL,
    role         text NOT NULL,
    content      text NOT NULL,
    name         text NOT NULL DEFAULT '',
    tool_call_id text NOT NULL DEFAULT '',
    tool_calls   text NOT NULL DEFAULT '[]',  -- compact JSON, as the SQLite store writes it
    is_error     boolean NOT NULL DEFAULT false,
    metadata     text NOT NULL DEFAULT '{}',  -- compact JSON text, kept byte for byte
    created_at   bigint NOT NULL,
    doc_len      integer NOT NULL,
    tsv          tsvector NOT NULL,
    PRIMARY KEY (agent_id, session_id, seq)
);

CREATE TABLE facts (
    agent_id   text COLLATE "C" NOT NULL,
    id         text COLLATE "C" NOT NULL,
    pk         bigint GENERATED ALWAYS AS IDENTITY,  -- insertion order: ties in search and list
    content    text NOT NULL,
    source     text COLLATE "C" NOT NULL DEFAULT '',
    category   text COLLATE "C" NOT NULL DEFAULT '',
    tags       text NOT NULL DEFAULT '[]',    -- JSON array text, order kept
    tag_set    text[] COLLATE "C" NOT NULL DEFAULT '{}',  -- the same tags, for @> filters
    metadata   text NOT NULL DEFAULT '{}',    -- compact JSON text, kept byte for byte
    meta       jsonb NOT NULL DEFAULT '{}',   -- the same, for @> prefilters (NUL-free)
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    doc_len    integer NOT NULL,
    tsv        tsvector NOT NULL,
    PRIMARY KEY (agent_id, id)
);
CREATE INDEX facts_created ON facts (agent_id, created_at, pk);
CREATE INDEX facts_meta ON facts USING gin (meta jsonb_path_ops);

-- corpus 1: facts, 2: messages. docs and tokens count every indexed row of the agent.
CREATE TABLE corpus_stats (
    agent_id text COLLATE "C" NOT NULL,
    corpus   smallint NOT NULL,
    docs     bigint NOT NULL DEFAULT 0,
    tokens   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (agent_id, corpus)
);

-- Search indexes: GIN on (agent_id, tsv), so a search reads only its agent's postings
-- (btree_gin, a contrib extension marked trusted). Without it (no contrib on the server,
-- or no right to create extensions) GIN on tsv alone: the same answers, slower with many
-- agents, since the postings of every agent are read and filtered.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS btree_gin;
    CREATE INDEX facts_search ON facts USING gin (agent_id, tsv);
    CREATE INDEX messages_search ON messages USING gin (agent_id, tsv);
EXCEPTION WHEN OTHERS THEN
    CREATE INDEX facts_search ON facts USING gin (tsv);
    CREATE INDEX messages_search ON messages USING gin (tsv);
END
$$;
