-- 0008_checkpoints: LangGraph's checkpoints and pending writes (SPEC 18,
-- sqlmem.adapters.langgraph.SqlmemSaver), in the agent's one memory file.
--
-- A checkpoint is keyed (thread_id, checkpoint_ns, checkpoint_id): checkpoint ids are
-- LangGraph's uuid6, whose text order is creation order, so "latest" and `list` (newest
-- first, `before`) are one backwards range of the primary key. The checkpoint and its
-- metadata are stored as LangGraph's serde wrote them (type tag + bytes), never parsed
-- by SQL; `run_id` is copied out of the metadata so `delete_for_runs` is one indexed
-- statement. Writes are keyed (thread_id, checkpoint_ns, checkpoint_id, task_id, idx):
-- a task's retry of the same write replaces nothing (regular writes) or the previous one
-- (the special channels: ERROR, INTERRUPT..., negative idx), as SqliteSaver does.
CREATE TABLE lg_checkpoints (
    thread_id            TEXT NOT NULL,
    checkpoint_ns        TEXT NOT NULL,
    checkpoint_id        TEXT NOT NULL,
    parent_checkpoint_id TEXT,
    checkpoint_type      TEXT NOT NULL,
    checkpoint           BLOB NOT NULL,
    metadata_type        TEXT NOT NULL,
    metadata             BLOB NOT NULL,
    run_id               TEXT,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);

CREATE INDEX lg_checkpoints_run ON lg_checkpoints(run_id) WHERE run_id IS NOT NULL;

CREATE TABLE lg_writes (
    thread_id     TEXT    NOT NULL,
    checkpoint_ns TEXT    NOT NULL,
    checkpoint_id TEXT    NOT NULL,
    task_id       TEXT    NOT NULL,
    idx           INTEGER NOT NULL,
    channel       TEXT    NOT NULL,
    value_type    TEXT    NOT NULL,
    value         BLOB    NOT NULL,
    task_path     TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
