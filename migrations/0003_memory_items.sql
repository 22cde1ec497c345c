-- 0003_memory_items: facts become memory items (SPEC 12): layer, kind, confidence,
-- salience, references, expiry, fingerprint and hits.
--
-- Why it looks like this:
-- * ADD COLUMN with a constant default rewrites no row: an upgraded file's facts read
--   the defaults (semantic, confidence 1.0, salience 0.5, hits 1, no expiry) until they
--   are next written, so upgrading 100,000 facts costs the two index builds below.
-- * `refs` holds `Fact.references` (REFERENCES is an SQL keyword) as a JSON array.
-- * The fingerprint (hex SHA-256 of the normalised content) cannot be computed in SQL
--   (NFKC, casefold): existing rows get '' here and sqlmem fills them on open, in one
--   write transaction (sqlite/items.py, fill_fingerprints), as it does for rows a plain
--   SQLite client inserts later. '' is never a real fingerprint.
-- * facts_fingerprint serves remember's lookup (fingerprint, layer, oldest created_at
--   first) and the open hook's search for unfilled ('') rows. It holds the first 16 hex
--   digits (64 bits) of the fingerprint, not all 64: random 64-character keys made
--   index_many ~12 us a fact dearer (+70%), the prefix ~1-2 us; the lookup compares the
--   whole fingerprint on the few rows the prefix finds.
-- * facts_expires is partial: it holds only facts that expire, so facts without expiry
--   (the usual case) cost nothing in it, and "is anything expired?", count(), expire()
--   and the expired-row set that reads exclude are range scans of expiring facts only.
-- * The FTS triggers fire on content/search_text/tags only: none of these columns
--   touches the index.

ALTER TABLE facts ADD COLUMN layer TEXT NOT NULL DEFAULT 'semantic'
    CHECK (layer IN ('episodic', 'semantic', 'procedural'));
ALTER TABLE facts ADD COLUMN kind TEXT NOT NULL DEFAULT '';
ALTER TABLE facts ADD COLUMN confidence REAL NOT NULL DEFAULT 1.0;
ALTER TABLE facts ADD COLUMN salience REAL NOT NULL DEFAULT 0.5;
ALTER TABLE facts ADD COLUMN refs TEXT NOT NULL DEFAULT '[]';      -- JSON array, order kept
ALTER TABLE facts ADD COLUMN expires_at INTEGER;                    -- unix ms, UTC; NULL: never
ALTER TABLE facts ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE facts ADD COLUMN hits INTEGER NOT NULL DEFAULT 1;

CREATE INDEX facts_fingerprint ON facts(substr(fingerprint, 1, 16), layer, created_at);
CREATE INDEX facts_expires ON facts(expires_at) WHERE expires_at IS NOT NULL;
