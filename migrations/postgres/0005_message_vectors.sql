-- sqlmem on PostgreSQL, version 5: embeddings of history messages, for searching a
-- conversation by meaning (history.search modes "vector" and "hybrid").
--
-- The SQLite file's design (migrations/0010_message_vectors.sql) on the agent's rows:
-- * One row per message with text, keyed like the message (agent_id, session_id, seq)
--   and co-located with it (Citus: the foreign key holds the distribution column);
--   pop and purge delete the message, the cascade deletes its vector.
-- * `vector` is float32 little-endian, unit length, in bytea: cosine is a dot product
--   computed by numpy over the candidates (one session's when the search names one).
--   `dim` and `model` say what it is: vectors of another model than the store's embedder
--   count as missing (embed_pending replaces them).
-- * `content_hash` (sha256 of model and text) is the agent's embedding cache.
-- * A changed content makes the vector stale: the trigger drops it in the same statement.
CREATE TABLE message_vectors (
    agent_id     text COLLATE "C" NOT NULL,
    session_id   text COLLATE "C" NOT NULL,
    seq          bigint NOT NULL,
    model        text NOT NULL,
    dim          integer NOT NULL CHECK (dim > 0),
    content_hash text COLLATE "C" NOT NULL,
    vector       bytea NOT NULL CHECK (length(vector) = 4 * dim),
    PRIMARY KEY (agent_id, session_id, seq),
    FOREIGN KEY (agent_id, session_id, seq)
        REFERENCES messages (agent_id, session_id, seq) ON DELETE CASCADE
);
CREATE INDEX message_vectors_hash ON message_vectors (agent_id, content_hash);

CREATE FUNCTION sqlmem_message_vector_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM message_vectors
    WHERE agent_id = NEW.agent_id AND session_id = NEW.session_id AND seq = NEW.seq;
    RETURN NULL;
END
$$;
CREATE TRIGGER messages_vector_stale AFTER UPDATE OF content ON messages
FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)
EXECUTE FUNCTION sqlmem_message_vector_stale();
