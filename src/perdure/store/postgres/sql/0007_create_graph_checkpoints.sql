-- LangGraph checkpoints (perdure.langgraph). Each LangGraph thread is one perdure run of the
-- reserved workflow `langgraph` (runs.idempotency_key = 'langgraph:' || thread id); these
-- tables hold its graph history, keyed like LangGraph's own savers.
--
-- graph_checkpoints: one row per checkpoint, without its channel values. `checkpoint` is the
--   serializer's bytes (possibly sealed), `checkpoint_type` the serializer's type tag,
--   `metadata` jsonb (filtered by `list` with @>), `channel_versions` jsonb {channel: version
--   text} (which blob each channel reads), `graph_run_id` the metadata's run_id (for
--   delete_for_runs).
-- graph_blobs: channel values, one row per (channel, version), shared by every checkpoint of the
--   thread and namespace that reads that version: a checkpoint stores only what changed.
-- graph_writes: pending writes of a checkpoint, one row per (task, index).

CREATE TABLE perdure.graph_checkpoints (
    tenant_id        text NOT NULL,
    thread_id        text NOT NULL,
    checkpoint_ns    text NOT NULL,
    checkpoint_id    text NOT NULL,
    run_id           text NOT NULL REFERENCES perdure.runs (run_id),
    parent_id        text,
    graph_run_id     text,
    checkpoint_type  text NOT NULL,
    checkpoint       bytea NOT NULL,
    metadata         jsonb NOT NULL,
    channel_versions jsonb NOT NULL,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id)
);

CREATE INDEX graph_checkpoints_by_run ON perdure.graph_checkpoints (tenant_id, graph_run_id);

CREATE TABLE perdure.graph_blobs (
    tenant_id     text NOT NULL,
    thread_id     text NOT NULL,
    checkpoint_ns text NOT NULL,
    channel       text NOT NULL,
    version       text NOT NULL,
    type          text NOT NULL,
    blob          bytea,
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, channel, version)
);

CREATE TABLE perdure.graph_writes (
    tenant_id     text NOT NULL,
    thread_id     text NOT NULL,
    checkpoint_ns text NOT NULL,
    checkpoint_id text NOT NULL,
    task_id       text NOT NULL,
    idx           integer NOT NULL,
    channel       text NOT NULL,
    type          text NOT NULL,
    blob          bytea,
    task_path     text NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
