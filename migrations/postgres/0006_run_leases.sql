-- sqlmem on PostgreSQL, version 5: the workspace extractor's one-run-at-a-time and
-- cooldown, per agent and kept in the database, so they hold across processes and
-- servers (the SQLite file's migrations/0010_run_leases.sql, keyed by agent_id first).
--
-- `started_at` (unix ms): when the agent's last run of this kind started (the cooldown
-- counts from it). `holder` and `expires_at` (unix ms): the run under way and its lease,
-- so a killed process blocks the next run only until the lease expires. Taken under a
-- row lock in a short transaction of its own and cleared by its holder; never held
-- across the model call.
CREATE TABLE run_leases (
    agent_id   text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL,
    holder     text,
    expires_at bigint,
    started_at bigint NOT NULL,
    PRIMARY KEY (agent_id, name)
);
