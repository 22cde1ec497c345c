-- 0010_run_leases: the workspace extractor's one-run-at-a-time and cooldown, kept in the
-- file so they hold across processes (several agent loops, a CLI, an MCP server on one
-- memory.db), not only across the threads of one process.
--
-- One row per kind of run (`name`, e.g. 'workspace_extractor'). `started_at` (unix ms) is
-- when the last run started: the cooldown counts from it. While a run is under way its
-- random `holder` token is set with `expires_at` (unix ms): a lease, so a process killed
-- in the middle of its run blocks the next one only until then, never forever. A finished
-- run clears `holder` and `expires_at` (only its own token: a run that outlived its lease
-- never clears a newer one). Taken and released in short write transactions of their own,
-- never held across the model call.
CREATE TABLE run_leases (
    name       TEXT    NOT NULL PRIMARY KEY,
    holder     TEXT,
    expires_at INTEGER,
    started_at INTEGER NOT NULL
) WITHOUT ROWID;
