-- 0001_initial: the first schema of a sqlmem memory.db (history and facts).
--
-- Why it looks like this:
-- * Sessions own a sequence counter (last_seq) and an archive boundary (archived_seq).
--   seq is taken from the counter inside the write transaction, so it stays unique and
--   gap-free with several writers. Compaction moves the boundary: messages with
--   seq <= archived_seq are archived, without rewriting a single message row.
-- * FTS5 tables use external content kept in sync by triggers, so any SQLite client can
--   search the file and the index can never keep words of a row that changed or left.
--   They index a view: coalesce(search_text, content). search_text is written only when
--   the text holds scripts without spaces (Chinese, Japanese, Thai, ...): each such
--   character is set apart by spaces so that a query of one or more characters matches.
-- * Messages carry a `searchable` flag: with history_search off they are stored unindexed
--   (cheaper appends); turning it on later indexes them (flag update trigger). Which
--   sessions hold such messages is the `sessions.unindexed` flag, set by the same upsert
--   that reserves the seqs (that row is written anyway), so an append with search off
--   writes no extra page. An earlier draft used a partial index over the unindexed
--   messages: it held every row while search was off and cost a page write per append.
-- * Fact tags live in fact_tags too (maintained by triggers), so a tag filter is an index
--   lookup inside the search query instead of a scan of JSON. The insert triggers are
--   split by tag count (none, one, several) to keep index_many cheap.
-- The FTS tokenizer below is substituted from StoreConfig.tokenizer when the file is made.

CREATE TABLE sessions (
    pk           INTEGER PRIMARY KEY,
    session_id   TEXT    NOT NULL UNIQUE,
    -- 1 while the session holds messages stored with history_search off. Placed before
    -- summary so reading it never touches a long summary's overflow pages.
    unindexed    INTEGER NOT NULL DEFAULT 0,
    summary      TEXT    NOT NULL DEFAULT '',
    last_seq     INTEGER NOT NULL DEFAULT 0,
    archived_seq INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,   -- unix milliseconds, UTC
    updated_at   INTEGER NOT NULL
);

CREATE TABLE messages (
    pk           INTEGER PRIMARY KEY,
    session      INTEGER NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    role         TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content      TEXT    NOT NULL,
    name         TEXT    NOT NULL DEFAULT '',
    tool_call_id TEXT    NOT NULL DEFAULT '',
    tool_calls   TEXT    NOT NULL DEFAULT '[]',   -- JSON array of {id, name, arguments}
    is_error     INTEGER NOT NULL DEFAULT 0,
    metadata     TEXT    NOT NULL DEFAULT '{}',   -- JSON object
    created_at   INTEGER NOT NULL,                -- unix milliseconds, UTC
    searchable   INTEGER NOT NULL DEFAULT 1,
    search_text  TEXT,                            -- NULL unless content needs segmenting
    UNIQUE (session, seq)                         -- get_recent is a range scan of this
);

CREATE VIEW messages_fts_source AS
    SELECT pk, coalesce(search_text, content) AS content FROM messages WHERE searchable;

CREATE VIRTUAL TABLE messages_fts USING fts5(
    content,
    content = 'messages_fts_source',
    content_rowid = 'pk',
    tokenize = '{tokenizer}'
);

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages WHEN new.searchable BEGIN
    INSERT INTO messages_fts(rowid, content)
        VALUES (new.pk, coalesce(new.search_text, new.content));
END;

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages WHEN old.searchable BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content)
        VALUES ('delete', old.pk, coalesce(old.search_text, old.content));
END;

CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, search_text, searchable ON messages
BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content)
        SELECT 'delete', old.pk, coalesce(old.search_text, old.content) WHERE old.searchable;
    INSERT INTO messages_fts(rowid, content)
        SELECT new.pk, coalesce(new.search_text, new.content) WHERE new.searchable;
END;

CREATE TABLE facts (
    pk          INTEGER PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    content     TEXT    NOT NULL,
    source      TEXT    NOT NULL DEFAULT '',
    category    TEXT    NOT NULL DEFAULT '',
    tags        TEXT    NOT NULL DEFAULT '[]',   -- JSON array, order kept
    metadata    TEXT    NOT NULL DEFAULT '{}',   -- JSON object
    created_at  INTEGER NOT NULL,                -- unix milliseconds, UTC
    updated_at  INTEGER NOT NULL,
    search_text TEXT                             -- NULL unless content needs segmenting
);

CREATE INDEX facts_created_at ON facts(created_at);
CREATE INDEX facts_category ON facts(category, created_at);
CREATE INDEX facts_source ON facts(source, created_at);

CREATE TABLE fact_tags (
    tag     TEXT    NOT NULL,
    fact_pk INTEGER NOT NULL REFERENCES facts(pk) ON DELETE CASCADE,
    PRIMARY KEY (tag, fact_pk)
) WITHOUT ROWID;

CREATE INDEX fact_tags_fact ON fact_tags(fact_pk);

CREATE VIEW facts_fts_source AS
    SELECT pk, coalesce(search_text, content) AS content FROM facts;

CREATE VIRTUAL TABLE facts_fts USING fts5(
    content,
    content = 'facts_fts_source',
    content_rowid = 'pk',
    tokenize = '{tokenizer}'
);

CREATE TRIGGER facts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts(rowid, content)
        VALUES (new.pk, coalesce(new.search_text, new.content));
END;

-- Tags on insert, in two triggers by the number of tags: a fact without tags costs nothing,
-- and one with a single tag (the usual case) skips the json_each scan and the DISTINCT
-- sorter, which measured ~1 µs a fact in index_many (benchmark W3c).
CREATE TRIGGER facts_insert_one_tag AFTER INSERT ON facts
WHEN json_array_length(new.tags) = 1 BEGIN
    INSERT OR IGNORE INTO fact_tags(tag, fact_pk) VALUES (json_extract(new.tags, '$[0]'), new.pk);
END;

-- DISTINCT, not just OR IGNORE: inside an upsert's DO UPDATE, SQLite replaces a trigger
-- statement's conflict clause with the outer statement's, so repeated tags would abort.
CREATE TRIGGER facts_insert_tags AFTER INSERT ON facts
WHEN json_array_length(new.tags) > 1 BEGIN
    INSERT OR IGNORE INTO fact_tags(tag, fact_pk)
        SELECT DISTINCT value, new.pk FROM json_each(new.tags);
END;

-- fact_tags rows go with the fact through ON DELETE CASCADE.
CREATE TRIGGER facts_delete AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts(facts_fts, rowid, content)
        VALUES ('delete', old.pk, coalesce(old.search_text, old.content));
END;

CREATE TRIGGER facts_update_text AFTER UPDATE OF content, search_text ON facts BEGIN
    INSERT INTO facts_fts(facts_fts, rowid, content)
        VALUES ('delete', old.pk, coalesce(old.search_text, old.content));
    INSERT INTO facts_fts(rowid, content)
        VALUES (new.pk, coalesce(new.search_text, new.content));
END;

CREATE TRIGGER facts_update_tags AFTER UPDATE OF tags ON facts WHEN old.tags IS NOT new.tags
BEGIN
    DELETE FROM fact_tags WHERE fact_pk = old.pk;
    INSERT OR IGNORE INTO fact_tags(tag, fact_pk)
        SELECT DISTINCT value, new.pk FROM json_each(new.tags);
END;
