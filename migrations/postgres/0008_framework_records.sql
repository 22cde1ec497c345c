-- sqlmem on PostgreSQL, version 8: the frameworks' records next to the agent's memory:
-- key-value items with expiry and vectors (LangGraph's store, LangChain's byte store)
-- and LangGraph checkpoints with their pending writes (the SQLite file's
-- migrations/0007_kv.sql, 0008_checkpoints.sql and kv_vectors, keyed by agent_id first).
--
-- Names, keys and ids are any text UTF-8 holds, NUL included, ordered by code point: they
-- are stored as their UTF-8 bytes (bytea), whose byte order is code point order, so a
-- namespace prefix is one range of the primary key and paging is keyset paging.
-- `write_seq` orders writes made in the same millisecond (the SQLite file's rowid).
-- Times are unix ms; `expires_at` NULL never expires; reads skip expired rows.
-- A namespace or key may be longer than a btree entry holds (LangGraph namespaces of a
-- thousand labels): rows are keyed by the sha256 of each, and namespace ranges use an index
-- on the first 1024 bytes (truncation keeps the order, so the range on the truncated bytes
-- contains the exact one).
CREATE TABLE kv (
    agent_id   text COLLATE "C" NOT NULL,
    ns_hash    bytea NOT NULL,
    key_hash   bytea NOT NULL,
    namespace  bytea NOT NULL,
    key        bytea NOT NULL,
    value      bytea NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    ttl_ms     bigint,
    expires_at bigint,
    write_seq  bigint GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (agent_id, ns_hash, key_hash)
);
CREATE INDEX kv_namespaces ON kv (agent_id, substring(namespace FROM 1 FOR 1024));
CREATE INDEX kv_expiry ON kv (agent_id, expires_at) WHERE expires_at IS NOT NULL;

-- One float32 unit-length vector per embedded field of an item; gone with the item (the
-- cascade) or when its value changes (the trigger, in the same statement).
CREATE TABLE kv_vectors (
    agent_id  text COLLATE "C" NOT NULL,
    ns_hash   bytea NOT NULL,
    key_hash  bytea NOT NULL,
    field     bytea NOT NULL,
    dims      integer NOT NULL CHECK (dims > 0),
    vector    bytea NOT NULL CHECK (length(vector) = 4 * dims),
    PRIMARY KEY (agent_id, ns_hash, key_hash, field),
    FOREIGN KEY (agent_id, ns_hash, key_hash)
        REFERENCES kv (agent_id, ns_hash, key_hash) ON DELETE CASCADE
);

CREATE FUNCTION sqlmem_kv_vectors_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM kv_vectors
    WHERE agent_id = NEW.agent_id AND ns_hash = NEW.ns_hash AND key_hash = NEW.key_hash;
    RETURN NULL;
END
$$;
CREATE TRIGGER kv_vectors_stale AFTER UPDATE OF value ON kv
FOR EACH ROW WHEN (OLD.value IS DISTINCT FROM NEW.value)
EXECUTE FUNCTION sqlmem_kv_vectors_stale();

-- Checkpoints and pending writes as LangGraph's serde wrote them (a type tag, bytes).
CREATE TABLE lg_checkpoints (
    agent_id             text COLLATE "C" NOT NULL,
    thread_id            bytea NOT NULL,
    checkpoint_ns        bytea NOT NULL,
    checkpoint_id        bytea NOT NULL,
    parent_checkpoint_id bytea,
    checkpoint_type      text NOT NULL,
    checkpoint           bytea NOT NULL,
    metadata_type        text NOT NULL,
    metadata             bytea NOT NULL,
    run_id               bytea,
    PRIMARY KEY (agent_id, thread_id, checkpoint_ns, checkpoint_id)
);
CREATE INDEX lg_checkpoints_run ON lg_checkpoints (agent_id, run_id) WHERE run_id IS NOT NULL;

CREATE TABLE lg_writes (
    agent_id      text COLLATE "C" NOT NULL,
    thread_id     bytea NOT NULL,
    checkpoint_ns bytea NOT NULL,
    checkpoint_id bytea NOT NULL,
    task_id       bytea NOT NULL,
    idx           integer NOT NULL,
    channel       bytea NOT NULL,
    value_type    text NOT NULL,
    value         bytea NOT NULL,
    task_path     bytea NOT NULL,
    PRIMARY KEY (agent_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
