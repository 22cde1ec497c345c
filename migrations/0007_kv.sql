-- 0007_kv: a key-value table for the frameworks' stores (SPEC 18): LangChain's byte store
-- (sqlmem.adapters.langchain.SqlmemByteStore) now, LangGraph's store later, in the agent's
-- one memory file with every guarantee of the engine.
--
-- Keyed (namespace, key), both any text. `namespace` starts with the owning store's tag
-- ("langchain.bytes:" + the byte store's own namespace), so stores sharing the file never
-- see each other's keys. Values are BLOBs: the byte store keeps bytes as they are; a store
-- of JSON keeps its own encoding. Expiry is data: `expires_at` (unix ms, NULL: never) is
-- `ttl_ms` after the last write (or read, for stores that refresh on read: LangGraph's
-- refresh_ttl); reads skip expired rows, and a sweep deletes them through the partial
-- index below. A rowid table (not WITHOUT ROWID): values may be large, and SQLite keeps
-- large rows best out of the key's b-tree.
CREATE TABLE kv (
    namespace  TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    value      BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    ttl_ms     INTEGER,
    expires_at INTEGER,
    PRIMARY KEY (namespace, key)
);

CREATE INDEX kv_expiry ON kv(expires_at) WHERE expires_at IS NOT NULL;
