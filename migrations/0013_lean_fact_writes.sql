-- 0013_lean_fact_writes: what every fact write pays for, cut where reads do not need it.
--
-- Why it looks like this:
-- * facts_fingerprint (remember's lookup of a repeated text) was keyed by the
--   fingerprint's first 16 hex digits, then layer and created_at: a random insert of a
--   ~40-byte entry per fact written, the largest single cost of index_many after the
--   full-text index. It is now keyed by the first 8 hex digits alone (~12-byte entries):
--   a lookup reads the facts sharing those 32 bits (a handful even at millions of facts;
--   the whole fingerprint, the layer and liveness are tested on them and their order is
--   sorted there), and a write costs ~3 µs less per fact (CPU time, batches of 1,000).
--   The index is rebuilt once when an older file is opened.
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
DROP INDEX facts_fingerprint;
CREATE INDEX facts_fingerprint ON facts(substr(fingerprint, 1, 8));

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
