-- sqlmem on PostgreSQL, version 2: the 0.2 history and fact protocols (SPEC 5, 12).
--
-- sessions.holes (history pop): pop() deletes the newest active message but leaves
-- last_seq where it is (a seq is never handed out twice), which leaves a hole. `holes`
-- counts the seqs in (archived_seq, last_seq] holding no message, so `count` stays one row
-- read: last_seq - archived_seq - holes. A pop adds one; moving the archive boundary over
-- holes takes them off in the same transaction. Databases made before this version never
-- popped anything: 0 is right for every existing session.
ALTER TABLE sessions ADD COLUMN holes bigint NOT NULL DEFAULT 0;

-- Memory items (SPEC 12): the same columns and encodings as the SQLite file's facts
-- (migrations/0003_memory_items.sql): refs is the JSON array text of `references`,
-- expires_at unix milliseconds (NULL: never), fingerprint the hex digest of the
-- normalised content (sqlmem.rules.identity). SQL cannot NFKC-normalise and casefold as
-- Python does, so rows stored before this version get '' here and the first open after
-- the migration fills them (sqlmem.postgres.items.fill_fingerprints).
ALTER TABLE facts
    ADD COLUMN layer       text COLLATE "C" NOT NULL DEFAULT 'semantic',
    ADD COLUMN kind        text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN confidence  double precision NOT NULL DEFAULT 1.0,
    ADD COLUMN salience    double precision NOT NULL DEFAULT 0.5,
    ADD COLUMN refs        text NOT NULL DEFAULT '[]',
    ADD COLUMN expires_at  bigint,
    ADD COLUMN fingerprint text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN hits        bigint NOT NULL DEFAULT 1;

-- remember's lookup: the oldest live fact of one agent and layer with a fingerprint.
CREATE INDEX facts_fingerprint ON facts (agent_id, fingerprint, layer, created_at, pk);
-- expire() and the aggregates' expiry test read only the facts that expire.
CREATE INDEX facts_expires ON facts (agent_id, expires_at) WHERE expires_at IS NOT NULL;
