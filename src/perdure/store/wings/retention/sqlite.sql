-- The named queries of the retention wing (sqlite); see perdure.store.queries.

-- name: expired_runs
SELECT tenant_id, run_id FROM runs r
WHERE status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
  AND updated_at <= :before
  AND (:workflow IS NULL OR workflow = :workflow)
  AND workflow NOT IN (SELECT value FROM json_each(:exclude))
  AND NOT EXISTS (
      SELECT 1 FROM savepoints s
      WHERE s.run_id = r.run_id AND (s.expires_at IS NULL OR s.expires_at > :now))
ORDER BY updated_at
LIMIT :limit;

-- name: erased_thread_runs
SELECT run_id, status, owner, lease_until FROM runs
WHERE tenant_id = :tenant_id AND thread_id = :thread_id;

-- name: run_artifact_digests
SELECT DISTINCT digest FROM artifacts WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_run_artifacts
DELETE FROM artifacts WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_run_history
DELETE FROM state_history WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_run_state_fields
DELETE FROM state_fields WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_run_steps
DELETE FROM steps WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_run_events
DELETE FROM events WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_run_effects
DELETE FROM effects WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_run_approvals
DELETE FROM approvals WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_run_signals
DELETE FROM signals WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_run_savepoints
DELETE FROM savepoints WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_run_forks
DELETE FROM forks WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_run_requests
-- Remembered client requests whose answer names the run.
DELETE FROM requests WHERE tenant_id = :tenant_id AND result LIKE :pattern;

-- name: detach_run_messages
UPDATE messages SET run_id = NULL WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: run_message_artifacts
SELECT content_artifact FROM messages WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: thread_message_artifacts
SELECT content_artifact FROM messages WHERE tenant_id = :tenant_id AND thread_id = :thread_id;

-- name: delete_thread_messages
DELETE FROM messages WHERE tenant_id = :tenant_id AND thread_id = :thread_id;

-- name: delete_run
DELETE FROM runs WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: doomed_runs
SELECT r.tenant_id, r.run_id,
       EXISTS (SELECT 1 FROM runs o
               WHERE o.tenant_id = r.tenant_id AND o.thread_id = r.thread_id
                 AND o.run_id <> r.run_id AND o.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')) AS live
FROM runs r
WHERE r.run_id IN (SELECT value FROM json_each(:run_ids)) AND r.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED');

-- name: runs_artifact_digests
SELECT DISTINCT tenant_id, digest FROM artifacts WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: runs_message_artifacts
SELECT tenant_id, content_artifact FROM messages
WHERE run_id IN (SELECT value FROM json_each(:run_ids)) AND content_artifact IS NOT NULL;

-- name: delete_runs_artifacts
DELETE FROM artifacts WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_runs_history
DELETE FROM state_history WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_runs_state_fields
DELETE FROM state_fields WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_runs_steps
DELETE FROM steps WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_runs_events
DELETE FROM events WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_runs_effects
DELETE FROM effects WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_runs_approvals
DELETE FROM approvals WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_runs_signals
DELETE FROM signals WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_runs_savepoints
DELETE FROM savepoints WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_runs_forks
DELETE FROM forks WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: detach_runs_messages
UPDATE messages SET run_id = NULL WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_runs_messages
DELETE FROM messages WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_runs
DELETE FROM runs WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- Archive and restore (cold tier): every row a run owns, out and back in.

-- name: prune_events
DELETE FROM events WHERE run_id IN (
    SELECT r.run_id FROM runs r
    WHERE r.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED') AND r.updated_at <= :before
      AND EXISTS (SELECT 1 FROM events e WHERE e.run_id = r.run_id)
    LIMIT :limit);

-- name: prune_history
-- A live savepoint keeps its run's history (it may be forked from).
DELETE FROM state_history WHERE run_id IN (
    SELECT r.run_id FROM runs r
    WHERE r.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED') AND r.updated_at <= :before
      AND EXISTS (SELECT 1 FROM state_history h WHERE h.run_id = r.run_id)
      AND NOT EXISTS (
          SELECT 1 FROM savepoints s
          WHERE s.run_id = r.run_id AND (s.expires_at IS NULL OR s.expires_at > :now))
    LIMIT :limit);

-- name: delete_run_stream_entries
DELETE FROM stream_entries
WHERE tenant_id = :tenant_id
  AND message_id IN (SELECT message_id FROM streams
                     WHERE tenant_id = :tenant_id AND run_id = :run_id);

-- name: delete_run_streams
DELETE FROM streams WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_run_thread_inbox
DELETE FROM thread_inbox WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_run_graph_writes
-- A LangGraph thread's run owns its graph rows (a thread is one run of workflow langgraph).
DELETE FROM graph_writes
WHERE tenant_id = :tenant_id
  AND thread_id IN (SELECT thread_id FROM runs WHERE tenant_id = :tenant_id
                    AND run_id = :run_id AND workflow = 'langgraph');

-- name: delete_run_graph_blobs
DELETE FROM graph_blobs
WHERE tenant_id = :tenant_id
  AND thread_id IN (SELECT thread_id FROM runs WHERE tenant_id = :tenant_id
                    AND run_id = :run_id AND workflow = 'langgraph');

-- name: delete_run_graph_checkpoints
DELETE FROM graph_checkpoints WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_thread_inbox
-- Messages posted to the thread from outside any run.
DELETE FROM thread_inbox WHERE tenant_id = :tenant_id AND thread_id = :thread_id;

-- name: delete_thread_policy
DELETE FROM threads WHERE tenant_id = :tenant_id AND thread_id = :thread_id;

-- name: delete_runs_stream_entries
DELETE FROM stream_entries
WHERE (tenant_id, message_id) IN (SELECT tenant_id, message_id FROM streams
                                  WHERE run_id IN (SELECT value FROM json_each(:run_ids)));

-- name: delete_runs_streams
DELETE FROM streams WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_runs_thread_inbox
DELETE FROM thread_inbox WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_runs_graph_writes
DELETE FROM graph_writes
WHERE (tenant_id, thread_id) IN (SELECT tenant_id, thread_id FROM runs
                                 WHERE run_id IN (SELECT value FROM json_each(:run_ids))
                                   AND workflow = 'langgraph');

-- name: delete_runs_graph_blobs
DELETE FROM graph_blobs
WHERE (tenant_id, thread_id) IN (SELECT tenant_id, thread_id FROM runs
                                 WHERE run_id IN (SELECT value FROM json_each(:run_ids))
                                   AND workflow = 'langgraph');

-- name: delete_runs_graph_checkpoints
DELETE FROM graph_checkpoints WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_run_state_tails
DELETE FROM state_tails WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_runs_state_tails
DELETE FROM state_tails WHERE run_id IN (SELECT value FROM json_each(:run_ids));
