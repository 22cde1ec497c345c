-- 0009_kv_vectors: embeddings of the LangGraph store's items, for its vector and hybrid
-- search (`index` config, SPEC 17 and 18).
--
-- Why it looks like this:
-- * One row per (namespace, key, field): LangGraph embeds each indexed field of an item
--   (`fields`, or a put's own `index` list; a path matching several values gives one row
--   each, "path.0", "path.1"), and an item's score is its best field's cosine.
-- * In the same file as the items (kv): vectors share their transactions, backups and
--   forgetting. No extension, no side index file.
-- * `vector` is float32 little-endian, unit length (sqlmem normalises before storing), so
--   cosine is a dot product; `dims` says what it is: rows of other dims than the store's
--   index config count as missing.
-- * The triggers keep vectors from outliving or misdescribing their item, whoever writes
--   kv: a deleted item (a delete, a TTL sweep) takes its vectors along, a changed value
--   drops them (sqlmem writes the new ones in the same transaction).
CREATE TABLE kv_vectors (
    namespace TEXT    NOT NULL,
    key       TEXT    NOT NULL,
    field     TEXT    NOT NULL,
    dims      INTEGER NOT NULL CHECK (dims > 0),
    vector    BLOB    NOT NULL CHECK (length(vector) = 4 * dims),
    PRIMARY KEY (namespace, key, field)
);

CREATE TRIGGER kv_vectors_item_deleted AFTER DELETE ON kv BEGIN
    DELETE FROM kv_vectors WHERE namespace = old.namespace AND key = old.key;
END;

CREATE TRIGGER kv_vectors_item_changed AFTER UPDATE OF value ON kv BEGIN
    DELETE FROM kv_vectors WHERE namespace = old.namespace AND key = old.key;
END;
