-- FTS5 leaf pages of 2000 bytes instead of FTS5's built-in 4050 (FTS5_DEFAULT_PAGE_SIZE
-- in current SQLite; the documentation's 1000 is out of date).
--
-- Why: every single-message commit writes a new small level-0 segment. A 4050-byte leaf
-- nearly fills a 4 KiB database page, so each such commit also rewrote neighbouring
-- pages of the %_data b-tree (~9 WAL frames per indexed append against ~7.5). Measured:
-- single appends with search on ~10% cheaper (W1: 3.6x -> 3.1x raw plain insert),
-- single fact upserts ~10% cheaper, index_many(1,000) ~5% dearer (1000-byte leaves made
-- it ~11% dearer for no further gain), same search latency and database size.
--
-- The setting lives in each table's %_config and applies to leaves written from now on;
-- segments already written keep their size until FTS5 merges them.
INSERT INTO messages_fts(messages_fts, rank) VALUES ('pgsz', 2000);
INSERT INTO facts_fts(facts_fts, rank) VALUES ('pgsz', 2000);
