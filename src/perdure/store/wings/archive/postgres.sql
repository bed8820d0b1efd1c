-- The named queries of the archive wing (postgres); see perdure.store.queries.

-- name: export_runs
SELECT * FROM perdure.runs WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY run_id;

-- name: export_steps
SELECT * FROM perdure.steps WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY seq;

-- name: export_state_fields
SELECT * FROM perdure.state_fields WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY field;

-- name: export_history
SELECT * FROM perdure.state_history WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY step_seq, version, field;

-- name: export_events
SELECT * FROM perdure.events WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY seq;

-- name: export_effects
SELECT * FROM perdure.effects WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY id;

-- name: export_approvals
SELECT * FROM perdure.approvals WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY id;

-- name: export_signals
SELECT * FROM perdure.signals WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY id;

-- name: export_savepoints
SELECT * FROM perdure.savepoints WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY step_seq, label;

-- name: export_forks
SELECT * FROM perdure.forks WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY run_id;

-- name: export_artifacts
SELECT * FROM perdure.artifacts WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY id;

-- name: export_messages
SELECT * FROM perdure.messages WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY seq;

-- name: restore_run
INSERT INTO perdure.runs (run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner, lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at, wake_at, step_attempts, retry_since, waiting, budget, workflow_version, state_schema)
VALUES (%(run_id)s, %(tenant_id)s, %(thread_id)s, %(workflow)s, %(status)s, %(next_step)s, %(state_version)s, %(fence)s, %(owner)s, %(lease_until)s, %(release)s::json, %(idempotency_key)s, %(result)s::json, %(error)s::json, %(steps_done)s, %(created_at)s, %(updated_at)s, %(wake_at)s, %(step_attempts)s, %(retry_since)s, %(waiting)s::json, %(budget)s::json, %(workflow_version)s, %(state_schema)s);

-- name: restore_effect
INSERT INTO perdure.effects (effect_key, tenant_id, run_id, step, step_seq, name, target, operation, request_hash, request, status, attempts, result, receipt, last_error, compensator, resolution, created_at, updated_at)
VALUES (%(effect_key)s, %(tenant_id)s, %(run_id)s, %(step)s, %(step_seq)s, %(name)s, %(target)s, %(operation)s, %(request_hash)s, %(request)s::json, %(status)s, %(attempts)s, %(result)s::json, %(receipt)s, %(last_error)s::json, %(compensator)s, %(resolution)s::json, %(created_at)s, %(updated_at)s);

-- name: restore_approval
INSERT INTO perdure.approvals (tenant_id, run_id, step, role, request, on_approve, on_reject, status, decided_by, decided_role, comment, request_id, requested_at, decided_at)
VALUES (%(tenant_id)s, %(run_id)s, %(step)s, %(role)s, %(request)s::json, %(on_approve)s, %(on_reject)s, %(status)s, %(decided_by)s, %(decided_role)s, %(comment)s, %(request_id)s, %(requested_at)s, %(decided_at)s);

-- name: restore_signal
INSERT INTO perdure.signals (tenant_id, run_id, signal_id, name, payload, received_at, consumed_at)
VALUES (%(tenant_id)s, %(run_id)s, %(signal_id)s, %(name)s, %(payload)s::json, %(received_at)s, %(consumed_at)s);

-- name: restore_artifact
INSERT INTO perdure.artifacts (tenant_id, run_id, step, step_seq, fence, digest, size, media_type, parents, status, created_at, committed_at)
VALUES (%(tenant_id)s, %(run_id)s, %(step)s, %(step_seq)s, %(fence)s, %(digest)s, %(size)s, %(media_type)s, %(parents)s::json, %(status)s, %(created_at)s, %(committed_at)s);

-- name: restore_message
INSERT INTO perdure.messages (tenant_id, thread_id, seq, run_id, role, content, tool_calls, tool_call_id, at, step_seq, content_artifact)
VALUES (%(tenant_id)s, %(thread_id)s, (SELECT COALESCE(MAX(seq), 0) + 1 FROM perdure.messages WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s), %(run_id)s, %(role)s, %(content)s, %(tool_calls)s::json, %(tool_call_id)s, %(at)s, %(step_seq)s, %(content_artifact)s::json);

-- name: restore_event
INSERT INTO perdure.events (tenant_id, run_id, type, step, fence, data, at)
VALUES (%(tenant_id)s, %(run_id)s, %(type)s, %(step)s, %(fence)s, %(data)s::json, %(at)s);

-- name: restore_step
INSERT INTO perdure.steps (run_id, seq, tenant_id, name, fence, outcome, next_step, started_at, finished_at)
VALUES (%(run_id)s, %(seq)s, %(tenant_id)s, %(name)s, %(fence)s, %(outcome)s, %(next_step)s, %(started_at)s, %(finished_at)s);

-- Pruning parts of finished runs that are kept (gc's events and history retention).

-- name: export_state_tails
SELECT * FROM perdure.state_tails WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY field, step_seq;
