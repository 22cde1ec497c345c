-- sqlmem on PostgreSQL, version 5: facts that change (keys, valid time, supersession).
--
-- The SQLite file's design (migrations/0010_fact_validity.sql) on the agent's rows:
-- * `key` names a slot; `chain` the chain a fact belongs to (its key, or "#<first id>"
--   for facts without a key linked by supersede; NULL for a fact in no chain). Each
--   member holds its link to the next (valid_to = the next one's valid_from,
--   superseded_by = its id), so a read tests one row: live at T when
--   valid_from <= T < valid_to. valid_from NULL: not given, valid from created_at.
-- * ADD COLUMN with NULL or constant defaults rewrites no row: existing facts are in no
--   chain and valid from their created_at. The indexes are partial: plain facts are in
--   none of them.
-- * Writers of one chain serialise on the agent's facts corpus row (corpus_stats), which
--   every fact write locks before it reads the chain (sqlmem.postgres.chains), so two
--   processes writing one key never leave two live facts.
-- * facts_chain_splice: a deleted member's link passes to the member before it.
ALTER TABLE facts
    ADD COLUMN key           text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN chain         text COLLATE "C",
    ADD COLUMN valid_from    bigint,
    ADD COLUMN valid_to      bigint,
    ADD COLUMN superseded_by text COLLATE "C";

CREATE INDEX facts_chain ON facts (agent_id, chain, layer) WHERE chain IS NOT NULL;
CREATE INDEX facts_valid_to ON facts (agent_id, valid_to) WHERE valid_to IS NOT NULL;
CREATE INDEX facts_valid_from ON facts (agent_id, valid_from) WHERE valid_from IS NOT NULL;
CREATE INDEX facts_successor ON facts (agent_id, superseded_by) WHERE superseded_by IS NOT NULL;

CREATE FUNCTION sqlmem_fact_chain_splice() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE facts SET valid_to = OLD.valid_to, superseded_by = OLD.superseded_by
    WHERE agent_id = OLD.agent_id AND superseded_by = OLD.id;
    RETURN NULL;
END;
$$;

CREATE TRIGGER facts_chain_splice AFTER DELETE ON facts
FOR EACH ROW WHEN (OLD.chain IS NOT NULL) EXECUTE FUNCTION sqlmem_fact_chain_splice();

-- facts_chain_move: an update that changes a chained fact's key, layer or valid_from
-- takes it out of its chain the same way (a fact with a key then joins its key's chain
-- again, sqlmem.postgres.chains). BEFORE: the row leaves with the update itself.
CREATE FUNCTION sqlmem_fact_chain_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE facts SET valid_to = OLD.valid_to, superseded_by = OLD.superseded_by
    WHERE agent_id = OLD.agent_id AND superseded_by = OLD.id;
    NEW.chain := NULL;
    NEW.valid_to := NULL;
    NEW.superseded_by := NULL;
    RETURN NEW;
END;
$$;

CREATE TRIGGER facts_chain_move BEFORE UPDATE OF key, layer, valid_from ON facts
FOR EACH ROW WHEN (OLD.chain IS NOT NULL AND (OLD.key IS DISTINCT FROM NEW.key
    OR OLD.layer IS DISTINCT FROM NEW.layer OR OLD.valid_from IS DISTINCT FROM NEW.valid_from))
EXECUTE FUNCTION sqlmem_fact_chain_move();
