-- 0013_fact_vectors_lean: the fact vectors lose their content-hash index.
--
-- Why it looks like this:
-- * fact_vectors_hash served one read, the embedding cache's "is this text embedded
--   already?", and cost every vector write a random insert into an index of 64-character
--   keys: about a third of the vector rows' share of a write transaction (CPU time under
--   the write lock), and on a large store one dirty page per vector at commit.
-- * The cache now finds identical content through the facts it belongs to: the
--   fingerprint index every fact already keeps (facts_fingerprint, for remember) narrows
--   to the facts of the same normalised text, the exact content is compared on those few
--   rows, and their vector is read by key. A vector is always of its own fact's content
--   (facts_vector_stale drops it when the content changes), so what is found is exact.
-- * content_hash stays a column, still written: export, import and other readers keep
--   seeing what they saw.
DROP INDEX fact_vectors_hash;

-- * fact_vectors_version counted every vector row with a trigger (an UPDATE of the one
--   version row per vector written). sqlmem now counts its own batch once, raising
--   batch_counted while it writes the rows and lowering it in the same transaction, and
--   the triggers count only while the flag is down: another client's writes, cascaded
--   and stale-content deletes are counted per row as before, and a rollback takes the
--   raised flag back with the rows.
ALTER TABLE fact_vectors_version ADD COLUMN batch_counted INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER fact_vectors_insert;
CREATE TRIGGER fact_vectors_insert AFTER INSERT ON fact_vectors
WHEN (SELECT batch_counted FROM fact_vectors_version WHERE id = 1) = 0 BEGIN
    UPDATE fact_vectors_version SET changes = changes + 1 WHERE id = 1;
END;

DROP TRIGGER fact_vectors_update;
CREATE TRIGGER fact_vectors_update AFTER UPDATE ON fact_vectors
WHEN (SELECT batch_counted FROM fact_vectors_version WHERE id = 1) = 0 BEGIN
    UPDATE fact_vectors_version SET changes = changes + 1 WHERE id = 1;
END;
