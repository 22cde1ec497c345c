-- sqlmem on PostgreSQL, version 3: embeddings of facts for vector and hybrid search (SPEC 17).
--
-- The SQLite file's design (migrations/0006_fact_vectors.sql) on the agent's rows:
-- * One row per fact, keyed (agent_id, fact_pk) and co-located with facts (Citus: the
--   foreign key holds the distribution column); deleting a fact deletes its vector.
-- * `vector` is float32 little-endian, unit length (sqlmem normalises before storing), in
--   bytea: cosine is a dot product computed by numpy over the filtered candidates; no
--   pgvector needed. `dim` and `model` say what it is: vectors of another model than the
--   store's embedder count as missing (embed_pending replaces them).
-- * `content_hash` (sha256 of model and text) is the agent's embedding cache: identical
--   content is embedded once, whichever of its facts holds it.
-- * A changed content makes the vector stale: the trigger drops it in the same statement,
--   whoever wrote the fact (sqlmem writes the new vector in the same transaction).
CREATE UNIQUE INDEX facts_agent_pk ON facts (agent_id, pk);

CREATE TABLE fact_vectors (
    agent_id     text COLLATE "C" NOT NULL,
    fact_pk      bigint NOT NULL,
    model        text NOT NULL,
    dim          integer NOT NULL CHECK (dim > 0),
    content_hash text COLLATE "C" NOT NULL,
    vector       bytea NOT NULL CHECK (length(vector) = 4 * dim),
    PRIMARY KEY (agent_id, fact_pk),
    FOREIGN KEY (agent_id, fact_pk) REFERENCES facts (agent_id, pk) ON DELETE CASCADE
);
CREATE INDEX fact_vectors_hash ON fact_vectors (agent_id, content_hash);

CREATE FUNCTION sqlmem_fact_vector_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM fact_vectors WHERE agent_id = NEW.agent_id AND fact_pk = NEW.pk;
    RETURN NULL;
END
$$;
CREATE TRIGGER facts_vector_stale AFTER UPDATE OF content ON facts
FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)
EXECUTE FUNCTION sqlmem_fact_vector_stale();
