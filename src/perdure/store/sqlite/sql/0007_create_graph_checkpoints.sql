-- LangGraph checkpoints (perdure.langgraph). Each LangGraph thread is one perdure run of the
-- reserved workflow `langgraph` (runs.idempotency_key = 'langgraph:' || thread id); these
-- tables hold its graph history, keyed like LangGraph's own savers.
--
-- graph_checkpoints: one row per checkpoint, without its channel values. `checkpoint` is the
--   serializer's bytes (possibly sealed), `checkpoint_type` the serializer's type tag,
--   `metadata` JSON (filtered by `list`), `channel_versions` JSON {channel: version text} (which
--   blob each channel reads), `graph_run_id` the metadata's run_id (for delete_for_runs).
-- graph_blobs: channel values, one row per (channel, version), shared by every checkpoint of the
--   thread and namespace that reads that version: a checkpoint stores only what changed.
-- graph_writes: pending writes of a checkpoint, one row per (task, index).

CREATE TABLE graph_checkpoints (
    tenant_id        TEXT NOT NULL,
    thread_id        TEXT NOT NULL,
    checkpoint_ns    TEXT NOT NULL,
    checkpoint_id    TEXT NOT NULL,
    run_id           TEXT NOT NULL REFERENCES runs (run_id),
    parent_id        TEXT,
    graph_run_id     TEXT,
    checkpoint_type  TEXT NOT NULL,
    checkpoint       BLOB NOT NULL,
    metadata         TEXT NOT NULL,
    channel_versions TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id)
) WITHOUT ROWID;

CREATE INDEX graph_checkpoints_by_run ON graph_checkpoints (tenant_id, graph_run_id);

CREATE TABLE graph_blobs (
    tenant_id     TEXT NOT NULL,
    thread_id     TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL,
    channel       TEXT NOT NULL,
    version       TEXT NOT NULL,
    type          TEXT NOT NULL,
    blob          BLOB,
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, channel, version)
) WITHOUT ROWID;

CREATE TABLE graph_writes (
    tenant_id     TEXT NOT NULL,
    thread_id     TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    idx           INTEGER NOT NULL,
    channel       TEXT NOT NULL,
    type          TEXT NOT NULL,
    blob          BLOB,
    task_path     TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
) WITHOUT ROWID;
