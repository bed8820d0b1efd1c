-- The named queries of the graphs wing (postgres); see perdure.store.queries.

-- name: insert_graph_thread
INSERT INTO perdure.runs (run_id, tenant_id, thread_id, workflow, status, next_step, release,
                          idempotency_key, workflow_version, state_schema, created_at,
                          updated_at)
VALUES (%(run_id)s, %(tenant_id)s, %(thread_id)s, %(workflow)s, 'RUNNING', %(next_step)s,
        %(release)s::json, %(idempotency_key)s, 0, 0, %(now)s, %(now)s)
ON CONFLICT DO NOTHING
RETURNING run_id;

-- name: graph_thread_advanced
UPDATE perdure.runs
SET next_step = %(next_step)s, steps_done = steps_done + %(steps)s,
    state_version = state_version + 1, updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: insert_graph_blob
INSERT INTO perdure.graph_blobs (tenant_id, thread_id, checkpoint_ns, channel, version, type,
                                 blob)
VALUES (%(tenant_id)s, %(thread_id)s, %(checkpoint_ns)s, %(channel)s, %(version)s, %(type)s,
        %(blob)s)
ON CONFLICT DO NOTHING;

-- name: upsert_graph_checkpoint
INSERT INTO perdure.graph_checkpoints (tenant_id, thread_id, checkpoint_ns, checkpoint_id,
                                       run_id, parent_id, graph_run_id, checkpoint_type,
                                       checkpoint, metadata, channel_versions, created_at)
VALUES (%(tenant_id)s, %(thread_id)s, %(checkpoint_ns)s, %(checkpoint_id)s, %(run_id)s,
        %(parent_id)s, %(graph_run_id)s, %(checkpoint_type)s, %(checkpoint)s,
        %(metadata)s::jsonb, %(channel_versions)s::jsonb, %(now)s)
ON CONFLICT (tenant_id, thread_id, checkpoint_ns, checkpoint_id) DO UPDATE
SET parent_id = excluded.parent_id, graph_run_id = excluded.graph_run_id,
    checkpoint_type = excluded.checkpoint_type, checkpoint = excluded.checkpoint,
    metadata = excluded.metadata, channel_versions = excluded.channel_versions;

-- name: insert_graph_write
INSERT INTO perdure.graph_writes (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id,
                                  idx, channel, type, blob, task_path)
VALUES (%(tenant_id)s, %(thread_id)s, %(checkpoint_ns)s, %(checkpoint_id)s, %(task_id)s,
        %(idx)s, %(channel)s, %(type)s, %(blob)s, %(task_path)s)
ON CONFLICT DO NOTHING;

-- name: upsert_graph_write
INSERT INTO perdure.graph_writes (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id,
                                  idx, channel, type, blob, task_path)
VALUES (%(tenant_id)s, %(thread_id)s, %(checkpoint_ns)s, %(checkpoint_id)s, %(task_id)s,
        %(idx)s, %(channel)s, %(type)s, %(blob)s, %(task_path)s)
ON CONFLICT (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE
SET channel = excluded.channel, type = excluded.type, blob = excluded.blob,
    task_path = excluded.task_path;

-- name: get_graph_checkpoint
SELECT tenant_id, thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint_type,
       checkpoint, metadata::text AS metadata
FROM perdure.graph_checkpoints
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s
  AND checkpoint_ns = %(checkpoint_ns)s AND checkpoint_id = %(checkpoint_id)s;

-- name: latest_graph_checkpoint
SELECT tenant_id, thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint_type,
       checkpoint, metadata::text AS metadata
FROM perdure.graph_checkpoints
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s
  AND checkpoint_ns = %(checkpoint_ns)s
ORDER BY checkpoint_id DESC
LIMIT 1;

-- name: list_graph_checkpoints
-- A metadata filter matches when the metadata contains it (jsonb @>).
SELECT tenant_id, thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint_type,
       checkpoint, metadata::text AS metadata
FROM perdure.graph_checkpoints
WHERE tenant_id = %(tenant_id)s
  AND (%(thread_id)s::text IS NULL OR thread_id = %(thread_id)s)
  AND (%(checkpoint_ns)s::text IS NULL OR checkpoint_ns = %(checkpoint_ns)s)
  AND (%(before)s::text IS NULL OR checkpoint_id < %(before)s)
  AND (%(filter)s::jsonb IS NULL OR metadata @> %(filter)s::jsonb)
ORDER BY checkpoint_id DESC
LIMIT %(limit)s;

-- name: graph_blobs_of
-- The blob of each channel at the version the checkpoint names (a missing blob: no value).
SELECT b.channel, b.version, b.type, b.blob
FROM perdure.graph_checkpoints AS c
CROSS JOIN LATERAL jsonb_each_text(c.channel_versions) AS v (channel, version)
JOIN perdure.graph_blobs AS b
  ON b.tenant_id = c.tenant_id AND b.thread_id = c.thread_id
 AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = v.channel AND b.version = v.version
WHERE c.tenant_id = %(tenant_id)s AND c.thread_id = %(thread_id)s
  AND c.checkpoint_ns = %(checkpoint_ns)s AND c.checkpoint_id = %(checkpoint_id)s;

-- name: graph_writes_of
SELECT task_id, idx, channel, type, blob, task_path FROM perdure.graph_writes
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s
  AND checkpoint_ns = %(checkpoint_ns)s AND checkpoint_id = %(checkpoint_id)s
ORDER BY task_path, task_id, idx;

-- name: trim_graph_checkpoints
-- Keep the newest %(keep)s checkpoints of each namespace (of %(checkpoint_ns)s only, if given).
DELETE FROM perdure.graph_checkpoints AS g
WHERE g.tenant_id = %(tenant_id)s AND g.thread_id = %(thread_id)s
  AND (%(checkpoint_ns)s::text IS NULL OR g.checkpoint_ns = %(checkpoint_ns)s)
  AND g.checkpoint_id NOT IN (
      SELECT k.checkpoint_id FROM perdure.graph_checkpoints AS k
      WHERE k.tenant_id = g.tenant_id AND k.thread_id = g.thread_id
        AND k.checkpoint_ns = g.checkpoint_ns
      ORDER BY k.checkpoint_id DESC
      LIMIT %(keep)s);

-- name: collect_graph_writes
-- Writes whose checkpoint is gone.
DELETE FROM perdure.graph_writes AS w
WHERE w.tenant_id = %(tenant_id)s AND w.thread_id = %(thread_id)s
  AND NOT EXISTS (
      SELECT 1 FROM perdure.graph_checkpoints AS c
      WHERE c.tenant_id = w.tenant_id AND c.thread_id = w.thread_id
        AND c.checkpoint_ns = w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id);

-- name: collect_graph_blobs
-- Blobs no remaining checkpoint of the thread reads.
DELETE FROM perdure.graph_blobs AS b
WHERE b.tenant_id = %(tenant_id)s AND b.thread_id = %(thread_id)s
  AND NOT EXISTS (
      SELECT 1 FROM perdure.graph_checkpoints AS c
      WHERE c.tenant_id = b.tenant_id AND c.thread_id = b.thread_id
        AND c.checkpoint_ns = b.checkpoint_ns
        AND c.channel_versions ->> b.channel = b.version);

-- name: graph_threads_of_runs
SELECT DISTINCT thread_id FROM perdure.graph_checkpoints
WHERE tenant_id = %(tenant_id)s AND graph_run_id = ANY (%(graph_runs)s::text[]);

-- name: delete_graph_runs
DELETE FROM perdure.graph_checkpoints
WHERE tenant_id = %(tenant_id)s AND graph_run_id = ANY (%(graph_runs)s::text[]);

-- name: graph_thread_has_checkpoints
SELECT checkpoint_id FROM perdure.graph_checkpoints
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s
LIMIT 1;

-- name: copy_graph_checkpoints
INSERT INTO perdure.graph_checkpoints (tenant_id, thread_id, checkpoint_ns, checkpoint_id,
                                       run_id, parent_id, graph_run_id, checkpoint_type,
                                       checkpoint, metadata, channel_versions, created_at)
SELECT tenant_id, %(target)s, checkpoint_ns, checkpoint_id, %(target_run_id)s, parent_id,
       graph_run_id, checkpoint_type, checkpoint, metadata, channel_versions, created_at
FROM perdure.graph_checkpoints
WHERE tenant_id = %(tenant_id)s AND thread_id = %(source)s
ON CONFLICT DO NOTHING;

-- name: copy_graph_blobs
INSERT INTO perdure.graph_blobs (tenant_id, thread_id, checkpoint_ns, channel, version, type,
                                 blob)
SELECT tenant_id, %(target)s, checkpoint_ns, channel, version, type, blob
FROM perdure.graph_blobs
WHERE tenant_id = %(tenant_id)s AND thread_id = %(source)s
ON CONFLICT DO NOTHING;

-- name: copy_graph_writes
INSERT INTO perdure.graph_writes (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id,
                                  idx, channel, type, blob, task_path)
SELECT tenant_id, %(target)s, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob,
       task_path
FROM perdure.graph_writes
WHERE tenant_id = %(tenant_id)s AND thread_id = %(source)s
ON CONFLICT DO NOTHING;
