-- The named queries of the retention wing (postgres); see perdure.store.queries.

-- name: expired_runs
SELECT tenant_id, run_id FROM perdure.runs r
WHERE status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
  AND updated_at <= %(before)s
  AND (%(workflow)s::text IS NULL OR workflow = %(workflow)s)
  AND workflow <> ALL (%(exclude)s::text[])
  AND NOT EXISTS (
      SELECT 1 FROM perdure.savepoints s
      WHERE s.run_id = r.run_id AND (s.expires_at IS NULL OR s.expires_at > %(now)s))
ORDER BY updated_at
LIMIT %(limit)s;

-- name: erased_thread_runs
-- Locked, so no worker claims one of them while the thread is erased.
SELECT run_id, status, owner, lease_until FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s
FOR UPDATE;

-- name: run_artifact_digests
SELECT DISTINCT digest FROM perdure.artifacts
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_run_artifacts
DELETE FROM perdure.artifacts WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_run_history
DELETE FROM perdure.state_history WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_run_state_fields
DELETE FROM perdure.state_fields WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_run_steps
DELETE FROM perdure.steps WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_run_events
DELETE FROM perdure.events WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_run_effects
DELETE FROM perdure.effects WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_run_approvals
DELETE FROM perdure.approvals WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_run_signals
DELETE FROM perdure.signals WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_run_savepoints
DELETE FROM perdure.savepoints WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_run_forks
DELETE FROM perdure.forks WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_run_requests
-- Remembered client requests whose answer names the run.
DELETE FROM perdure.requests
WHERE tenant_id = %(tenant_id)s AND result::text LIKE %(pattern)s;

-- name: detach_run_messages
UPDATE perdure.messages SET run_id = NULL
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: run_message_artifacts
SELECT content_artifact FROM perdure.messages
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: thread_message_artifacts
SELECT content_artifact FROM perdure.messages
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s;

-- name: delete_thread_messages
DELETE FROM perdure.messages WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s;

-- name: delete_run
DELETE FROM perdure.runs WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: doomed_runs
SELECT r.tenant_id, r.run_id,
       EXISTS (SELECT 1 FROM perdure.runs o
               WHERE o.tenant_id = r.tenant_id AND o.thread_id = r.thread_id
                 AND o.run_id <> r.run_id AND o.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')) AS live
FROM perdure.runs r
WHERE r.run_id = ANY (%(run_ids)s::text[]) AND r.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED');

-- name: runs_artifact_digests
SELECT DISTINCT tenant_id, digest FROM perdure.artifacts WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: runs_message_artifacts
SELECT tenant_id, content_artifact FROM perdure.messages
WHERE run_id = ANY (%(run_ids)s::text[]) AND content_artifact IS NOT NULL;

-- name: delete_runs_artifacts
DELETE FROM perdure.artifacts WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: delete_runs_history
DELETE FROM perdure.state_history WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: delete_runs_state_fields
DELETE FROM perdure.state_fields WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: delete_runs_steps
DELETE FROM perdure.steps WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: delete_runs_events
DELETE FROM perdure.events WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: delete_runs_effects
DELETE FROM perdure.effects WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: delete_runs_approvals
DELETE FROM perdure.approvals WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: delete_runs_signals
DELETE FROM perdure.signals WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: delete_runs_savepoints
DELETE FROM perdure.savepoints WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: delete_runs_forks
DELETE FROM perdure.forks WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: detach_runs_messages
UPDATE perdure.messages SET run_id = NULL WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: delete_runs_messages
DELETE FROM perdure.messages WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: delete_runs
DELETE FROM perdure.runs WHERE run_id = ANY (%(run_ids)s::text[]);

-- Archive and restore (cold tier): every row a run owns, out and back in.

-- name: prune_events
DELETE FROM perdure.events WHERE run_id IN (
    SELECT r.run_id FROM perdure.runs r
    WHERE r.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED') AND r.updated_at <= %(before)s
      AND EXISTS (SELECT 1 FROM perdure.events e WHERE e.run_id = r.run_id)
    LIMIT %(limit)s);

-- name: prune_history
-- A live savepoint keeps its run's history (it may be forked from).
DELETE FROM perdure.state_history WHERE run_id IN (
    SELECT r.run_id FROM perdure.runs r
    WHERE r.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED') AND r.updated_at <= %(before)s
      AND EXISTS (SELECT 1 FROM perdure.state_history h WHERE h.run_id = r.run_id)
      AND NOT EXISTS (
          SELECT 1 FROM perdure.savepoints s
          WHERE s.run_id = r.run_id AND (s.expires_at IS NULL OR s.expires_at > %(now)s))
    LIMIT %(limit)s);

-- name: delete_run_stream_entries
DELETE FROM perdure.stream_entries
WHERE tenant_id = %(tenant_id)s
  AND message_id IN (SELECT message_id FROM perdure.streams
                     WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s);

-- name: delete_run_streams
DELETE FROM perdure.streams WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_run_thread_inbox
DELETE FROM perdure.thread_inbox WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_run_graph_writes
-- A LangGraph thread's run owns its graph rows (a thread is one run of workflow langgraph).
DELETE FROM perdure.graph_writes
WHERE tenant_id = %(tenant_id)s
  AND thread_id IN (SELECT thread_id FROM perdure.runs WHERE tenant_id = %(tenant_id)s
                    AND run_id = %(run_id)s AND workflow = 'langgraph');

-- name: delete_run_graph_blobs
DELETE FROM perdure.graph_blobs
WHERE tenant_id = %(tenant_id)s
  AND thread_id IN (SELECT thread_id FROM perdure.runs WHERE tenant_id = %(tenant_id)s
                    AND run_id = %(run_id)s AND workflow = 'langgraph');

-- name: delete_run_graph_checkpoints
DELETE FROM perdure.graph_checkpoints WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_thread_inbox
-- Messages posted to the thread from outside any run.
DELETE FROM perdure.thread_inbox WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s;

-- name: delete_thread_policy
DELETE FROM perdure.threads WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s;

-- name: delete_runs_stream_entries
DELETE FROM perdure.stream_entries
WHERE (tenant_id, message_id) IN (SELECT tenant_id, message_id FROM perdure.streams
                                  WHERE run_id = ANY (%(run_ids)s::text[]));

-- name: delete_runs_streams
DELETE FROM perdure.streams WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: delete_runs_thread_inbox
DELETE FROM perdure.thread_inbox WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: delete_runs_graph_writes
DELETE FROM perdure.graph_writes
WHERE (tenant_id, thread_id) IN (SELECT tenant_id, thread_id FROM perdure.runs
                                 WHERE run_id = ANY (%(run_ids)s::text[])
                                   AND workflow = 'langgraph');

-- name: delete_runs_graph_blobs
DELETE FROM perdure.graph_blobs
WHERE (tenant_id, thread_id) IN (SELECT tenant_id, thread_id FROM perdure.runs
                                 WHERE run_id = ANY (%(run_ids)s::text[])
                                   AND workflow = 'langgraph');

-- name: delete_runs_graph_checkpoints
DELETE FROM perdure.graph_checkpoints WHERE run_id = ANY (%(run_ids)s::text[]);

-- name: delete_run_state_tails
DELETE FROM perdure.state_tails WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: delete_runs_state_tails
DELETE FROM perdure.state_tails WHERE run_id = ANY (%(run_ids)s::text[]);
