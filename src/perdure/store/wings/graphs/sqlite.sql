-- The named queries of the graphs wing (sqlite); see perdure.store.queries.

-- name: insert_graph_thread
INSERT INTO runs (run_id, tenant_id, thread_id, workflow, status, next_step, release,
                  idempotency_key, workflow_version, state_schema, created_at, updated_at)
VALUES (:run_id, :tenant_id, :thread_id, :workflow, 'RUNNING', :next_step, :release,
        :idempotency_key, 0, 0, :now, :now)
ON CONFLICT DO NOTHING
RETURNING run_id;

-- name: graph_thread_advanced
UPDATE runs
SET next_step = :next_step, steps_done = steps_done + :steps,
    state_version = state_version + 1, updated_at = :now
WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: insert_graph_blob
INSERT INTO graph_blobs (tenant_id, thread_id, checkpoint_ns, channel, version, type, blob)
VALUES (:tenant_id, :thread_id, :checkpoint_ns, :channel, :version, :type, :blob)
ON CONFLICT DO NOTHING;

-- name: upsert_graph_checkpoint
INSERT INTO graph_checkpoints (tenant_id, thread_id, checkpoint_ns, checkpoint_id, run_id,
                               parent_id, graph_run_id, checkpoint_type, checkpoint, metadata,
                               channel_versions, created_at)
VALUES (:tenant_id, :thread_id, :checkpoint_ns, :checkpoint_id, :run_id, :parent_id,
        :graph_run_id, :checkpoint_type, :checkpoint, :metadata, :channel_versions, :now)
ON CONFLICT (tenant_id, thread_id, checkpoint_ns, checkpoint_id) DO UPDATE
SET parent_id = excluded.parent_id, graph_run_id = excluded.graph_run_id,
    checkpoint_type = excluded.checkpoint_type, checkpoint = excluded.checkpoint,
    metadata = excluded.metadata, channel_versions = excluded.channel_versions;

-- name: insert_graph_write
INSERT INTO graph_writes (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
                          channel, type, blob, task_path)
VALUES (:tenant_id, :thread_id, :checkpoint_ns, :checkpoint_id, :task_id, :idx, :channel,
        :type, :blob, :task_path)
ON CONFLICT DO NOTHING;

-- name: upsert_graph_write
INSERT INTO graph_writes (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
                          channel, type, blob, task_path)
VALUES (:tenant_id, :thread_id, :checkpoint_ns, :checkpoint_id, :task_id, :idx, :channel,
        :type, :blob, :task_path)
ON CONFLICT (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE
SET channel = excluded.channel, type = excluded.type, blob = excluded.blob,
    task_path = excluded.task_path;

-- name: get_graph_checkpoint
SELECT * FROM graph_checkpoints
WHERE tenant_id = :tenant_id AND thread_id = :thread_id AND checkpoint_ns = :checkpoint_ns
  AND checkpoint_id = :checkpoint_id;

-- name: latest_graph_checkpoint
SELECT * FROM graph_checkpoints
WHERE tenant_id = :tenant_id AND thread_id = :thread_id AND checkpoint_ns = :checkpoint_ns
ORDER BY checkpoint_id DESC
LIMIT 1;

-- name: list_graph_checkpoints
-- A metadata filter matches when every key of :filter is in the metadata with the same value.
SELECT * FROM graph_checkpoints AS c
WHERE c.tenant_id = :tenant_id
  AND (:thread_id IS NULL OR c.thread_id = :thread_id)
  AND (:checkpoint_ns IS NULL OR c.checkpoint_ns = :checkpoint_ns)
  AND (:before IS NULL OR c.checkpoint_id < :before)
  AND (:filter IS NULL OR NOT EXISTS (
      SELECT 1 FROM json_each(:filter) AS f
      WHERE NOT EXISTS (
          SELECT 1 FROM json_each(c.metadata) AS m
          WHERE m.key = f.key AND m.type = f.type AND m.value IS f.value)))
ORDER BY c.checkpoint_id DESC
LIMIT coalesce(:limit, -1);

-- name: graph_blobs_of
-- The blob of each channel at the version the checkpoint names (a missing blob: no value).
SELECT b.channel, b.version, b.type, b.blob
FROM graph_checkpoints AS c, json_each(c.channel_versions) AS v
JOIN graph_blobs AS b
  ON b.tenant_id = c.tenant_id AND b.thread_id = c.thread_id
 AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = v.key AND b.version = v.value
WHERE c.tenant_id = :tenant_id AND c.thread_id = :thread_id
  AND c.checkpoint_ns = :checkpoint_ns AND c.checkpoint_id = :checkpoint_id;

-- name: graph_writes_of
SELECT task_id, idx, channel, type, blob, task_path FROM graph_writes
WHERE tenant_id = :tenant_id AND thread_id = :thread_id AND checkpoint_ns = :checkpoint_ns
  AND checkpoint_id = :checkpoint_id
ORDER BY task_path, task_id, idx;

-- name: trim_graph_checkpoints
-- Keep the newest :keep checkpoints of each namespace (of :checkpoint_ns only, when given).
DELETE FROM graph_checkpoints
WHERE tenant_id = :tenant_id AND thread_id = :thread_id
  AND (:checkpoint_ns IS NULL OR checkpoint_ns = :checkpoint_ns)
  AND checkpoint_id NOT IN (
      SELECT k.checkpoint_id FROM graph_checkpoints AS k
      WHERE k.tenant_id = graph_checkpoints.tenant_id AND k.thread_id = graph_checkpoints.thread_id
        AND k.checkpoint_ns = graph_checkpoints.checkpoint_ns
      ORDER BY k.checkpoint_id DESC
      LIMIT :keep);

-- name: collect_graph_writes
-- Writes whose checkpoint is gone.
DELETE FROM graph_writes
WHERE tenant_id = :tenant_id AND thread_id = :thread_id
  AND NOT EXISTS (
      SELECT 1 FROM graph_checkpoints AS c
      WHERE c.tenant_id = graph_writes.tenant_id AND c.thread_id = graph_writes.thread_id
        AND c.checkpoint_ns = graph_writes.checkpoint_ns
        AND c.checkpoint_id = graph_writes.checkpoint_id);

-- name: collect_graph_blobs
-- Blobs no remaining checkpoint of the thread reads.
DELETE FROM graph_blobs
WHERE tenant_id = :tenant_id AND thread_id = :thread_id
  AND NOT EXISTS (
      SELECT 1 FROM graph_checkpoints AS c, json_each(c.channel_versions) AS v
      WHERE c.tenant_id = graph_blobs.tenant_id AND c.thread_id = graph_blobs.thread_id
        AND c.checkpoint_ns = graph_blobs.checkpoint_ns
        AND v.key = graph_blobs.channel AND v.value = graph_blobs.version);

-- name: graph_threads_of_runs
SELECT DISTINCT thread_id FROM graph_checkpoints
WHERE tenant_id = :tenant_id AND graph_run_id IN (SELECT value FROM json_each(:graph_runs));

-- name: delete_graph_runs
DELETE FROM graph_checkpoints
WHERE tenant_id = :tenant_id AND graph_run_id IN (SELECT value FROM json_each(:graph_runs));

-- name: graph_thread_has_checkpoints
SELECT checkpoint_id FROM graph_checkpoints
WHERE tenant_id = :tenant_id AND thread_id = :thread_id
LIMIT 1;

-- name: copy_graph_checkpoints
INSERT INTO graph_checkpoints (tenant_id, thread_id, checkpoint_ns, checkpoint_id, run_id,
                               parent_id, graph_run_id, checkpoint_type, checkpoint, metadata,
                               channel_versions, created_at)
SELECT tenant_id, :target, checkpoint_ns, checkpoint_id, :target_run_id, parent_id,
       graph_run_id, checkpoint_type, checkpoint, metadata, channel_versions, created_at
FROM graph_checkpoints
WHERE tenant_id = :tenant_id AND thread_id = :source
ON CONFLICT DO NOTHING;

-- name: copy_graph_blobs
INSERT INTO graph_blobs (tenant_id, thread_id, checkpoint_ns, channel, version, type, blob)
SELECT tenant_id, :target, checkpoint_ns, channel, version, type, blob
FROM graph_blobs
WHERE tenant_id = :tenant_id AND thread_id = :source
ON CONFLICT DO NOTHING;

-- name: copy_graph_writes
INSERT INTO graph_writes (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
                          channel, type, blob, task_path)
SELECT tenant_id, :target, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob,
       task_path
FROM graph_writes
WHERE tenant_id = :tenant_id AND thread_id = :source
ON CONFLICT DO NOTHING;
