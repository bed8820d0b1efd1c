-- The named queries of the archive wing (sqlite); see perdure.store.queries.

-- name: export_runs
SELECT * FROM runs WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY run_id;

-- name: export_steps
SELECT * FROM steps WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY seq;

-- name: export_state_fields
SELECT * FROM state_fields WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY field;

-- name: export_history
SELECT * FROM state_history WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY step_seq, version, field;

-- name: export_events
SELECT * FROM events WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY seq;

-- name: export_effects
SELECT * FROM effects WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY id;

-- name: export_approvals
SELECT * FROM approvals WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY id;

-- name: export_signals
SELECT * FROM signals WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY id;

-- name: export_savepoints
SELECT * FROM savepoints WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY step_seq, label;

-- name: export_forks
SELECT * FROM forks WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY run_id;

-- name: export_artifacts
SELECT * FROM artifacts WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY id;

-- name: export_messages
SELECT * FROM messages WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY seq;

-- name: restore_run
INSERT INTO runs (run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner, lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at, wake_at, step_attempts, retry_since, waiting, budget, workflow_version, state_schema)
VALUES (:run_id, :tenant_id, :thread_id, :workflow, :status, :next_step, :state_version, :fence, :owner, :lease_until, :release, :idempotency_key, :result, :error, :steps_done, :created_at, :updated_at, :wake_at, :step_attempts, :retry_since, :waiting, :budget, :workflow_version, :state_schema);

-- name: restore_effect
INSERT INTO effects (effect_key, tenant_id, run_id, step, step_seq, name, target, operation, request_hash, request, status, attempts, result, receipt, last_error, compensator, resolution, created_at, updated_at)
VALUES (:effect_key, :tenant_id, :run_id, :step, :step_seq, :name, :target, :operation, :request_hash, :request, :status, :attempts, :result, :receipt, :last_error, :compensator, :resolution, :created_at, :updated_at);

-- name: restore_approval
INSERT INTO approvals (tenant_id, run_id, step, role, request, on_approve, on_reject, status, decided_by, decided_role, comment, request_id, requested_at, decided_at)
VALUES (:tenant_id, :run_id, :step, :role, :request, :on_approve, :on_reject, :status, :decided_by, :decided_role, :comment, :request_id, :requested_at, :decided_at);

-- name: restore_signal
INSERT INTO signals (tenant_id, run_id, signal_id, name, payload, received_at, consumed_at)
VALUES (:tenant_id, :run_id, :signal_id, :name, :payload, :received_at, :consumed_at);

-- name: restore_artifact
INSERT INTO artifacts (tenant_id, run_id, step, step_seq, fence, digest, size, media_type, parents, status, created_at, committed_at)
VALUES (:tenant_id, :run_id, :step, :step_seq, :fence, :digest, :size, :media_type, :parents, :status, :created_at, :committed_at);

-- name: restore_message
INSERT INTO messages (tenant_id, thread_id, seq, run_id, role, content, tool_calls, tool_call_id, at, step_seq, content_artifact)
VALUES (:tenant_id, :thread_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE tenant_id = :tenant_id AND thread_id = :thread_id), :run_id, :role, :content, :tool_calls, :tool_call_id, :at, :step_seq, :content_artifact);

-- name: restore_event
INSERT INTO events (tenant_id, run_id, type, step, fence, data, at)
VALUES (:tenant_id, :run_id, :type, :step, :fence, :data, :at);

-- name: restore_step
INSERT INTO steps (run_id, seq, tenant_id, name, fence, outcome, next_step, started_at, finished_at)
VALUES (:run_id, :seq, :tenant_id, :name, :fence, :outcome, :next_step, :started_at, :finished_at);

-- Pruning parts of finished runs that are kept (gc's events and history retention).

-- name: export_state_tails
SELECT * FROM state_tails WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY field, step_seq;

-- Memory (0018) ------------------------------------------------------------------------------
