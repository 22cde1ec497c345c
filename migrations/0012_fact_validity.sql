-- 0010_fact_validity: facts that change (keys, valid time, supersession).
--
-- Why it looks like this:
-- * `key` names a slot ("user.city"); `chain` names the chain a fact belongs to: its key,
--   or "#<first id>" for facts without a key linked by supersede (no key holds '#'),
--   NULL for a fact in no chain (every fact of a 0.2 file, and most facts). A chain is
--   ordered by valid_from (ties: pk, the write order), and each member holds its own
--   link to the next (valid_to = the next one's valid_from, superseded_by = its id), so
--   a read tests one row: live at T when valid_from <= T < valid_to.
-- * valid_from is NULL when not given and the fact is in no chain: the fact is valid
--   from its created_at. ADD COLUMN with a NULL default rewrites no row, so a 0.2 file
--   upgrades in place at the cost of the (empty) index builds below.
-- * The indexes are partial: a fact in no chain, with no explicit valid_from (the usual
--   case) is in none of them, so plain writes pay nothing. facts_chain finds a chain's
--   members (writes place a fact in one); facts_valid_to and facts_valid_from give reads
--   the (few) rows not valid now, as facts_expires does for expiry; facts_successor
--   finds the member before a fact when it leaves its chain.
-- * facts_chain_splice: when a chain member is deleted (delete, expire, forget, or any
--   SQLite client), the member before it takes over its link, so the chain stays whole
--   and the fact before a deleted live fact is live again.
ALTER TABLE facts ADD COLUMN key TEXT NOT NULL DEFAULT '';
ALTER TABLE facts ADD COLUMN chain TEXT;
ALTER TABLE facts ADD COLUMN valid_from INTEGER;     -- unix ms, UTC; NULL: created_at
ALTER TABLE facts ADD COLUMN valid_to INTEGER;       -- unix ms, UTC; NULL: forever
ALTER TABLE facts ADD COLUMN superseded_by TEXT;     -- the next member's id

CREATE INDEX facts_chain ON facts(chain, layer) WHERE chain IS NOT NULL;
CREATE INDEX facts_valid_to ON facts(valid_to) WHERE valid_to IS NOT NULL;
CREATE INDEX facts_valid_from ON facts(valid_from) WHERE valid_from IS NOT NULL;
CREATE INDEX facts_successor ON facts(superseded_by) WHERE superseded_by IS NOT NULL;

CREATE TRIGGER facts_chain_splice AFTER DELETE ON facts WHEN old.chain IS NOT NULL BEGIN
    UPDATE facts SET valid_to = old.valid_to, superseded_by = old.superseded_by
    WHERE superseded_by = old.id;
END;

-- facts_chain_move: an update that changes a chained fact's key, layer or valid_from
-- (an update by id, a promotion) takes it out of its chain the same way; a fact with a
-- key then joins its key's chain again where its valid_from falls (sqlite/chains.py).
CREATE TRIGGER facts_chain_move AFTER UPDATE OF key, layer, valid_from ON facts
WHEN old.chain IS NOT NULL AND (old.key IS NOT new.key OR old.layer IS NOT new.layer
    OR old.valid_from IS NOT new.valid_from) BEGIN
    UPDATE facts SET valid_to = old.valid_to, superseded_by = old.superseded_by
    WHERE superseded_by = old.id;
    UPDATE facts SET chain = NULL, valid_to = NULL, superseded_by = NULL WHERE pk = new.pk;
END;
