-- 0010_message_vectors: embeddings of history messages, for searching a conversation by
-- meaning (history.search modes "vector" and "hybrid").
--
-- Why it looks like this:
-- * The fact vectors' design (0006_fact_vectors.sql) on messages: one row per message
--   (message_pk is the key), in the same file, written in the message's own transaction,
--   so vectors share the history's backups, export and forgetting: pop and purge delete
--   the message rows and ON DELETE CASCADE (the engine turns foreign_keys on) takes the
--   vectors along; vacuum() rewrites the file without them.
-- * `vector` is float32 little-endian, unit length, so cosine is a dot product; `dim` and
--   `model` say what it is: vectors of another model than the store's embedder count as
--   missing (embed_pending replaces them).
-- * `content_hash` (sha256 of model and text) is the embedding cache: a text said twice
--   ("ok", "thanks") is embedded once; message_vectors_hash finds it.
-- * Messages without text (a tool call alone) get no row.
-- * sqlmem never rewrites a message's content, but another client may: the trigger drops
--   the then stale vector in the same statement (embed_pending fills it again).
CREATE TABLE message_vectors (
    message_pk   INTEGER PRIMARY KEY REFERENCES messages(pk) ON DELETE CASCADE,
    model        TEXT NOT NULL,
    dim          INTEGER NOT NULL CHECK (dim > 0),
    content_hash TEXT NOT NULL,
    vector       BLOB NOT NULL CHECK (length(vector) = 4 * dim)
);

CREATE INDEX message_vectors_hash ON message_vectors(content_hash);

CREATE TRIGGER messages_vector_stale AFTER UPDATE OF content ON messages
WHEN old.content IS NOT new.content BEGIN
    DELETE FROM message_vectors WHERE message_pk = new.pk;
END;
