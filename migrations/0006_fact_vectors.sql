-- 0006_fact_vectors: embeddings of facts for semantic and hybrid search (SPEC 17).
--
-- Why it looks like this:
-- * One row per fact (fact_pk is the key), in the same file: vectors share the facts'
--   transactions, backups, export and forgetting (ON DELETE CASCADE with the engine's
--   foreign_keys on; vacuum() rewrites the file without them). No extension, no side
--   index file.
-- * `vector` is float32 little-endian, unit length (sqlmem normalises before storing), so
--   cosine is a dot product; `dim` and `model` say what it is: vectors of another model
--   than the store's embedder count as missing (embed_pending replaces them).
-- * `content_hash` (sha256 of model and text) is the embedding cache: identical content
--   is embedded once, whichever fact holds it; facts_vectors_hash finds it.
-- * fact_vectors_version counts every change to fact_vectors (triggers, so other clients'
--   writes and cascaded deletes count too): a process that keeps the vectors in memory
--   for unfiltered searches reads this one row to know whether its copy is current.
-- * A changed content makes the vector stale: the trigger drops it in the same statement,
--   whoever wrote the fact (sqlmem writes the new vector in the same transaction; a plain
--   SQLite client's edit leaves the fact for embed_pending).
CREATE TABLE fact_vectors (
    fact_pk      INTEGER PRIMARY KEY REFERENCES facts(pk) ON DELETE CASCADE,
    model        TEXT NOT NULL,
    dim          INTEGER NOT NULL CHECK (dim > 0),
    content_hash TEXT NOT NULL,
    vector       BLOB NOT NULL CHECK (length(vector) = 4 * dim)
);

CREATE INDEX fact_vectors_hash ON fact_vectors(content_hash);

CREATE TRIGGER facts_vector_stale AFTER UPDATE OF content ON facts
WHEN old.content IS NOT new.content BEGIN
    DELETE FROM fact_vectors WHERE fact_pk = new.pk;
END;

CREATE TABLE fact_vectors_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    changes INTEGER NOT NULL
);
INSERT INTO fact_vectors_version(id, changes) VALUES (1, 0);

CREATE TRIGGER fact_vectors_insert AFTER INSERT ON fact_vectors BEGIN
    UPDATE fact_vectors_version SET changes = changes + 1 WHERE id = 1;
END;

CREATE TRIGGER fact_vectors_update AFTER UPDATE ON fact_vectors BEGIN
    UPDATE fact_vectors_version SET changes = changes + 1 WHERE id = 1;
END;

CREATE TRIGGER fact_vectors_delete AFTER DELETE ON fact_vectors BEGIN
    UPDATE fact_vectors_version SET changes = changes + 1 WHERE id = 1;
END;
