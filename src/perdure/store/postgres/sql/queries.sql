-- Named queries for the PostgreSQL store. Each starts with a "-- name: NAME" line and uses
-- %(named)s parameters. Loaded by perdure.store.queries; never built from strings.
-- Columns are listed, never "*", so a prepared statement keeps its shape when a later
-- migration adds a column.

-- name: configure_session
SELECT set_config('synchronous_commit', 'on', false),
       set_config('TimeZone', 'UTC', false);

-- name: insert_run
INSERT INTO perdure.runs (run_id, tenant_id, thread_id, workflow, status, next_step, release,
                          idempotency_key, budget, workflow_version, state_schema, created_at,
                          updated_at)
VALUES (%(run_id)s, %(tenant_id)s, %(thread_id)s, %(workflow)s, 'PENDING', %(next_step)s,
        %(release)s::json, %(idempotency_key)s, %(budget)s::json, %(workflow_version)s,
        %(state_schema)s, %(now)s, %(now)s)
ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
RETURNING run_id;

-- name: run_by_key
SELECT run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner,
       lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at,
       wake_at, step_attempts, retry_since, waiting, budget, workflow_version, state_schema
FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND idempotency_key = %(idempotency_key)s;

-- name: get_run
SELECT run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner,
       lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at,
       wake_at, step_attempts, retry_since, waiting, budget, workflow_version, state_schema
FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: list_runs
SELECT run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner,
       lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at,
       wake_at, step_attempts, retry_since, waiting, budget, workflow_version, state_schema
FROM perdure.runs
WHERE tenant_id = %(tenant_id)s
  AND (%(any_status)s OR status = ANY (%(statuses)s::text[]))
  AND (%(workflow)s::text IS NULL OR workflow = %(workflow)s)
  AND (%(thread_id)s::text IS NULL OR thread_id = %(thread_id)s)
ORDER BY created_at DESC, run_id DESC
LIMIT %(limit)s;

-- name: upsert_field
INSERT INTO perdure.state_fields (run_id, tenant_id, field, value)
VALUES (%(run_id)s, %(tenant_id)s, %(field)s, %(value)s)
ON CONFLICT (run_id, field) DO UPDATE SET value = EXCLUDED.value;

-- name: load_state
SELECT field, value FROM perdure.state_fields
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: pick_next
-- The worker's scan: the oldest runnable run that no other transaction has locked. Concurrent
-- claimers skip each other's rows instead of waiting, so they never take the same run.
SELECT tenant_id, run_id, owner, status
FROM perdure.runs
WHERE (status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED')
       OR (status = 'WAITING_EXTERNAL' AND wake_at IS NOT NULL))
  AND (lease_until IS NULL OR lease_until < %(now)s OR owner = %(dead_owner)s)
  AND (wake_at IS NULL OR wake_at <= %(now)s)
  AND workflow = ANY (%(workflows)s::text[])
  AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)
ORDER BY created_at
LIMIT 1
FOR UPDATE SKIP LOCKED;

-- name: pick_run
-- One named run: waits for a concurrent writer of that row, then re-checks the conditions.
SELECT tenant_id, run_id, owner, status
FROM perdure.runs
WHERE run_id = %(run_id)s
  AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)
  AND (status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED')
       OR (status = 'WAITING_EXTERNAL' AND wake_at IS NOT NULL))
  AND (lease_until IS NULL OR lease_until < %(now)s OR owner = %(dead_owner)s)
  AND (wake_at IS NULL OR wake_at <= %(now)s)
  AND workflow = ANY (%(workflows)s::text[])
FOR UPDATE;

-- name: claim_run
-- The run pick_next or pick_run locked: the new lease, fence and status.
UPDATE perdure.runs
SET owner = %(owner)s,
    lease_until = %(lease_until)s,
    fence = fence + 1,
    state_version = state_version + 1,
    status = CASE WHEN status IN ('PENDING', 'WAITING_EXTERNAL') THEN 'RUNNING' ELSE status END,
    wake_at = NULL,
    updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
RETURNING run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence,
          owner, lease_until, release, idempotency_key, result, error, steps_done, created_at,
          updated_at, wake_at, step_attempts, retry_since, waiting, budget, workflow_version,
          state_schema;

-- name: heartbeat
UPDATE perdure.runs SET lease_until = %(lease_until)s
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
  AND owner = %(owner)s AND fence = %(fence)s
  AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED');

-- name: release
UPDATE perdure.runs SET owner = NULL, lease_until = NULL
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
  AND owner = %(owner)s AND fence = %(fence)s
  AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED');

-- name: advance_run
UPDATE perdure.runs
SET status = %(status)s,
    next_step = %(next_step)s,
    state_version = state_version + 1,
    steps_done = steps_done + %(steps)s,
    step_attempts = 0,
    retry_since = NULL,
    waiting = %(waiting)s::json,
    wake_at = %(wake_at)s,
    budget = COALESCE(%(budget)s::json, budget),
    workflow_version = COALESCE(%(workflow_version)s::integer, workflow_version),
    state_schema = COALESCE(%(state_schema)s::integer, state_schema),
    result = %(result)s::json,
    error = %(error)s::json,
    owner = CASE WHEN %(keep_lease)s THEN owner END,
    lease_until = CASE WHEN %(keep_lease)s THEN lease_until END,
    updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
  AND fence = %(fence)s AND state_version = %(expected_version)s AND status = 'RUNNING'
RETURNING state_version, steps_done, thread_id;

-- name: set_status
UPDATE perdure.runs
SET status = %(status)s,
    state_version = state_version + 1,
    wake_at = NULL,
    error = COALESCE(%(error)s::json, error),
    owner = CASE WHEN %(keep_lease)s THEN owner END,
    lease_until = CASE WHEN %(keep_lease)s THEN lease_until END,
    updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
  AND status = %(expected_status)s AND state_version = %(expected_version)s
  AND (%(fence)s::bigint IS NULL OR fence = %(fence)s)
  AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
RETURNING run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence,
          owner, lease_until, release, idempotency_key, result, error, steps_done, created_at,
          updated_at, wake_at, step_attempts, retry_since, waiting, budget, workflow_version,
          state_schema;

-- name: defer_run
UPDATE perdure.runs
SET wake_at = %(wake_at)s,
    step_attempts = %(step_attempts)s,
    retry_since = COALESCE(retry_since, %(now)s),
    owner = NULL,
    lease_until = NULL,
    state_version = state_version + 1,
    updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
  AND fence = %(fence)s AND state_version = %(expected_version)s AND status = 'RUNNING'
RETURNING run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence,
          owner, lease_until, release, idempotency_key, result, error, steps_done, created_at,
          updated_at, wake_at, step_attempts, retry_since, waiting, budget, workflow_version,
          state_schema;

-- name: lock_run
-- The run's row, locked until the transaction ends (a signal and a commit that would wait for
-- it take turns, so a signal is never left in the inbox of a run that waits for it).
SELECT run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner,
       lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at,
       wake_at, step_attempts, retry_since, waiting, budget, workflow_version, state_schema
FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
FOR UPDATE;

-- name: insert_step
INSERT INTO perdure.steps (run_id, seq, tenant_id, name, fence, outcome, next_step, started_at,
                           finished_at)
VALUES (%(run_id)s, %(seq)s, %(tenant_id)s, %(name)s, %(fence)s, %(outcome)s, %(next_step)s,
        %(started_at)s, %(finished_at)s);

-- name: list_steps
SELECT run_id, seq, name, fence, outcome, next_step, started_at, finished_at
FROM perdure.steps
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY seq;

-- name: insert_event
INSERT INTO perdure.events (tenant_id, run_id, type, step, fence, data, at)
VALUES (%(tenant_id)s, %(run_id)s, %(type)s, %(step)s, %(fence)s, %(data)s::json, %(at)s);

-- name: list_events
SELECT run_id, seq, type, step, fence, data, at
FROM perdure.events
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND seq > %(after)s
ORDER BY seq
LIMIT %(limit)s;

-- name: lock_thread
-- Numbering a thread's messages (MAX(seq) + 1) is safe only one writer at a time: the lock is
-- held until the transaction ends. The first key is 'ratc' in ASCII, a namespace of its own.
SELECT pg_advisory_xact_lock(1918989411, hashtext(%(tenant_id)s || '/' || %(thread_id)s));

-- name: insert_message
INSERT INTO perdure.messages (tenant_id, thread_id, seq, run_id, role, content, tool_calls,
                              tool_call_id, at, step_seq, content_artifact)
VALUES (%(tenant_id)s, %(thread_id)s,
        (SELECT COALESCE(MAX(seq), 0) + 1 FROM perdure.messages
         WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s),
        %(run_id)s, %(role)s, %(content)s, %(tool_calls)s::json, %(tool_call_id)s, %(at)s,
        %(step_seq)s, %(content_artifact)s::json);

-- name: list_messages
SELECT seq, run_id, role, content, tool_calls, tool_call_id, at, content_artifact
FROM perdure.messages
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s
ORDER BY seq;

-- name: lock_migrations
-- One migrator at a time, until its transaction ends. The key is 'perdure' in ASCII.
SELECT pg_advisory_xact_lock(32199698247246196);

-- name: migrations_table_exists
SELECT to_regclass('perdure.perdure_migrations') IS NOT NULL AS present;

-- name: create_schema
CREATE SCHEMA IF NOT EXISTS perdure;

-- name: create_migrations_table
CREATE TABLE IF NOT EXISTS perdure.perdure_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL
);

-- name: applied_migrations
SELECT version, name, checksum FROM perdure.perdure_migrations ORDER BY version;

-- name: record_migration
INSERT INTO perdure.perdure_migrations (version, name, checksum, applied_at)
VALUES (%(version)s, %(name)s, %(checksum)s, %(now)s);

-- name: insert_effect
-- The run's row is share-locked while the intent is recorded, so a claim that would raise the
-- fence waits for this transaction instead of overtaking it.
INSERT INTO perdure.effects (effect_key, tenant_id, run_id, step, step_seq, name, target,
                             operation, request_hash, request, status, attempts, compensator,
                             created_at, updated_at)
SELECT %(key)s, %(tenant_id)s, %(run_id)s, %(step)s, %(step_seq)s, %(name)s, %(target)s,
       %(operation)s, %(request_hash)s, %(request)s::json, 'planned', 0, %(compensator)s,
       %(now)s, %(now)s
WHERE EXISTS (SELECT 1 FROM perdure.runs
              WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND fence = %(fence)s
                AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
              FOR SHARE)
ON CONFLICT (effect_key) DO NOTHING;

-- name: get_effect
SELECT effect_key, tenant_id, run_id, step, step_seq, name, target, operation, request_hash,
       request, status, attempts, result, receipt, last_error, compensator, resolution,
       created_at, updated_at
FROM perdure.effects
WHERE tenant_id = %(tenant_id)s AND effect_key = %(key)s;

-- name: update_effect
UPDATE perdure.effects
SET status = %(status)s,
    attempts = attempts + %(attempts_delta)s,
    result = COALESCE(%(result)s::json, result),
    receipt = COALESCE(%(receipt)s::text, receipt),
    last_error = COALESCE(%(error)s::json, last_error),
    resolution = COALESCE(%(resolution)s::json, resolution),
    updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND effect_key = %(key)s AND status = %(expected_status)s
  AND (%(fence)s::bigint IS NULL OR EXISTS (
        SELECT 1 FROM perdure.runs
        WHERE runs.tenant_id = %(tenant_id)s AND runs.run_id = effects.run_id
          AND runs.fence = %(fence)s
          AND runs.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
        FOR SHARE))
RETURNING effect_key, tenant_id, run_id, step, step_seq, name, target, operation, request_hash,
          request, status, attempts, result, receipt, last_error, compensator, resolution,
          created_at, updated_at;

-- name: list_effects
SELECT effect_key, tenant_id, run_id, step, step_seq, name, target, operation, request_hash,
       request, status, attempts, result, receipt, last_error, compensator, resolution,
       created_at, updated_at
FROM perdure.effects
WHERE tenant_id = %(tenant_id)s
  AND (%(run_id)s::text IS NULL OR run_id = %(run_id)s)
  AND (%(any_status)s OR status = ANY (%(statuses)s::text[]))
ORDER BY id
LIMIT %(limit)s;

-- name: insert_approval
INSERT INTO perdure.approvals (tenant_id, run_id, step, role, request, on_approve, on_reject,
                               status, requested_at)
VALUES (%(tenant_id)s, %(run_id)s, %(step)s, %(role)s, %(request)s::json, %(on_approve)s,
        %(on_reject)s, 'pending', %(now)s);

-- name: list_approvals
SELECT id, run_id, step, role, request, on_approve, on_reject, status, decided_by,
       decided_role, comment, requested_at, decided_at
FROM perdure.approvals
WHERE tenant_id = %(tenant_id)s
  AND (%(run_id)s::text IS NULL OR run_id = %(run_id)s)
  AND (NOT %(pending)s OR status = 'pending')
ORDER BY id;

-- name: get_approval
SELECT id, run_id, step, role, request, on_approve, on_reject, status, decided_by,
       decided_role, comment, requested_at, decided_at
FROM perdure.approvals
WHERE tenant_id = %(tenant_id)s AND id = %(id)s;

-- name: approval_by_request
SELECT id, run_id, step, role, request, on_approve, on_reject, status, decided_by,
       decided_role, comment, requested_at, decided_at
FROM perdure.approvals
WHERE tenant_id = %(tenant_id)s AND request_id = %(request_id)s;

-- name: decide_approval
UPDATE perdure.approvals
SET status = %(status)s, decided_by = %(by)s, decided_role = %(role)s, comment = %(comment)s,
    request_id = %(request_id)s, decided_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND id = %(id)s AND status = 'pending'
RETURNING id, run_id, step, role, request, on_approve, on_reject, status, decided_by,
          decided_role, comment, requested_at, decided_at;

-- name: wake_run
UPDATE perdure.runs
SET status = 'RUNNING',
    next_step = %(next_step)s,
    waiting = NULL,
    wake_at = NULL,
    owner = NULL,
    lease_until = NULL,
    state_version = state_version + 1,
    updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND status = %(expected_status)s
RETURNING state_version;

-- name: insert_signal
INSERT INTO perdure.signals (tenant_id, run_id, signal_id, name, payload, received_at)
VALUES (%(tenant_id)s, %(run_id)s, %(signal_id)s, %(name)s, %(payload)s::json, %(now)s)
ON CONFLICT (tenant_id, run_id, signal_id) DO NOTHING;

-- name: get_signal
SELECT id, run_id, signal_id, name, payload, received_at, consumed_at
FROM perdure.signals
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND signal_id = %(signal_id)s;

-- name: first_unconsumed_signal
SELECT id, run_id, signal_id, name, payload, received_at, consumed_at
FROM perdure.signals
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND name = %(name)s
  AND consumed_at IS NULL
ORDER BY id
LIMIT 1;

-- name: consume_signal
UPDATE perdure.signals SET consumed_at = %(now)s WHERE id = %(id)s AND consumed_at IS NULL;

-- name: list_signals
SELECT id, run_id, signal_id, name, payload, received_at, consumed_at
FROM perdure.signals
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY id;

-- name: reopen_run
UPDATE perdure.runs
SET status = 'RUNNING',
    next_step = %(next_step)s,
    budget = COALESCE(%(budget)s::json, budget),
    waiting = NULL, wake_at = NULL,       -- no wait left
    step_attempts = 0, retry_since = NULL,  -- no retry pending
    owner = NULL, lease_until = NULL,       -- the lease is free: any worker may claim the run
    state_version = state_version + 1, updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
  AND status = %(expected_status)s AND state_version = %(expected_version)s
RETURNING run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence,
          owner, lease_until, release, idempotency_key, result, error, steps_done, created_at,
          updated_at, wake_at, step_attempts, retry_since, waiting, budget, workflow_version,
          state_schema;

-- name: reset_planned_effects
UPDATE perdure.effects SET attempts = 0, updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND status = 'planned';

-- name: recall_request
SELECT operation, result FROM perdure.requests
WHERE tenant_id = %(tenant_id)s AND request_id = %(request_id)s;

-- name: remember_request
INSERT INTO perdure.requests (tenant_id, request_id, operation, result, created_at)
VALUES (%(tenant_id)s, %(request_id)s, %(operation)s, %(result)s::json, %(now)s)
ON CONFLICT (tenant_id, request_id) DO NOTHING;

-- name: delete_run_messages
DELETE FROM perdure.messages WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: upgrade_run
UPDATE perdure.runs
SET next_step = %(next_step)s,
    workflow_version = %(workflow_version)s,
    state_schema = %(state_schema)s,
    state_version = state_version + 1,
    updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
  AND fence = %(fence)s AND state_version = %(expected_version)s AND status = 'RUNNING'
RETURNING run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence,
          owner, lease_until, release, idempotency_key, result, error, steps_done, created_at,
          updated_at, wake_at, step_attempts, retry_since, waiting, budget, workflow_version,
          state_schema;

-- name: delete_field
DELETE FROM perdure.state_fields
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND field = %(field)s;

-- name: scan_runs
SELECT run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner,
       lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at,
       wake_at, step_attempts, retry_since, waiting, budget, workflow_version, state_schema
FROM perdure.runs
WHERE status = ANY (%(statuses)s::text[])
  AND (%(workflow)s::text IS NULL OR workflow = %(workflow)s)
ORDER BY created_at
LIMIT %(limit)s;

-- name: requeue_too_new
UPDATE perdure.runs
SET status = 'RUNNING',
    state_version = state_version + 1,
    owner = NULL,
    lease_until = NULL,
    updated_at = %(now)s
WHERE status = 'QUARANTINED' AND workflow = %(workflow)s
  AND error ->> 'reason' = 'schema_too_new'
  AND workflow_version <= %(workflow_version)s AND state_schema <= %(state_schema)s
RETURNING tenant_id, run_id;

-- name: worker_beat
INSERT INTO perdure.workers (owner, host, pid, concurrency, runs_held, started_at, last_beat)
VALUES (%(owner)s, %(host)s, %(pid)s, %(concurrency)s, %(runs_held)s, %(now)s, %(now)s)
ON CONFLICT (owner) DO UPDATE
SET runs_held = excluded.runs_held, concurrency = excluded.concurrency,
    last_beat = excluded.last_beat, stopped_at = NULL;

-- name: worker_stopped
UPDATE perdure.workers SET stopped_at = %(now)s, runs_held = 0 WHERE owner = %(owner)s;

-- name: list_workers
SELECT * FROM perdure.workers
WHERE stopped_at IS NULL OR stopped_at > %(since)s
ORDER BY started_at;

-- name: stuck_runs
SELECT * FROM perdure.runs
WHERE status = 'RUNNING' AND updated_at < %(before)s
ORDER BY updated_at
LIMIT %(limit)s;

-- name: next_wake
SELECT MIN(wake_at) AS wake_at FROM perdure.runs
WHERE wake_at > %(now)s AND status IN ('RUNNING', 'WAITING_EXTERNAL');

-- name: listen_work
LISTEN perdure_work;

-- name: latest_events
SELECT * FROM (
    SELECT run_id, seq, type, step, fence, data, at
    FROM perdure.events
    WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
    ORDER BY seq DESC
    LIMIT %(limit)s
) AS latest
ORDER BY seq;

-- History, savepoints, forks (0011) ---------------------------------------------------------

-- name: insert_history
INSERT INTO perdure.state_history (run_id, tenant_id, field, step_seq, version, value)
VALUES (%(run_id)s, %(tenant_id)s, %(field)s, %(step_seq)s, %(version)s, %(value)s);

-- name: state_changes
SELECT step_seq, version, field, octet_length(value) AS size,
       COALESCE(strpos(value, '"__perdure_artifact__"') > 0, false) AS offloaded
FROM perdure.state_history
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY step_seq, version, field;

-- name: state_at
-- For each field, its latest value at or before the step (the primary key serves it).
SELECT DISTINCT ON (field) field, value FROM perdure.state_history
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND step_seq <= %(step_seq)s
ORDER BY field, step_seq DESC, version DESC;

-- name: get_savepoint
SELECT run_id, tenant_id, label, step_seq, created_by, created_at, expires_at
FROM perdure.savepoints
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND label = %(label)s;

-- name: insert_savepoint
INSERT INTO perdure.savepoints (run_id, tenant_id, label, step_seq, created_by, created_at,
                                expires_at)
VALUES (%(run_id)s, %(tenant_id)s, %(label)s, %(step_seq)s, %(by)s, %(now)s, %(expires_at)s);

-- name: list_savepoints
SELECT run_id, tenant_id, label, step_seq, created_by, created_at, expires_at
FROM perdure.savepoints
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY step_seq, created_at;

-- name: insert_fork
INSERT INTO perdure.forks (run_id, tenant_id, source_run_id, step_seq, savepoint, patched,
                           created_by, created_at)
VALUES (%(run_id)s, %(tenant_id)s, %(source_run_id)s, %(step_seq)s, %(savepoint)s,
        %(patched)s::json, %(by)s, %(now)s);

-- name: get_fork
SELECT run_id, tenant_id, source_run_id, step_seq, savepoint, patched, created_by, created_at
FROM perdure.forks WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: run_message_bounds
SELECT MAX(CASE WHEN COALESCE(step_seq, 0) <= %(step_seq)s THEN seq END) AS kept,
       MIN(seq) AS first
FROM perdure.messages
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s AND run_id = %(run_id)s;

-- Artifacts (0012) ---------------------------------------------------------------------------

-- name: insert_artifact
INSERT INTO perdure.artifacts (tenant_id, run_id, step, step_seq, fence, digest, size,
                               media_type, parents, status, created_at, committed_at)
VALUES (%(tenant_id)s, %(run_id)s, %(step)s, %(step_seq)s, %(fence)s, %(digest)s, %(size)s,
        %(media_type)s, %(parents)s::json, %(status)s, %(now)s,
        CASE WHEN %(status)s = 'committed' THEN %(now)s::timestamptz END)
RETURNING id;

-- name: commit_artifact
UPDATE perdure.artifacts SET status = 'committed', committed_at = %(now)s, step_seq = %(step_seq)s
WHERE id = %(id)s AND tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND fence = %(fence)s
  AND status = 'uploaded';

-- name: list_artifacts
SELECT id, tenant_id, run_id, step, step_seq, fence, digest, size, media_type, parents,
       status, created_at, committed_at
FROM perdure.artifacts
WHERE tenant_id = %(tenant_id)s
  AND (%(run_id)s::text IS NULL OR run_id = %(run_id)s)
  AND (%(digest)s::text IS NULL OR digest = %(digest)s)
ORDER BY id;

-- name: orphan_uploads
SELECT a.id, a.tenant_id, a.run_id, a.step, a.step_seq, a.fence, a.digest, a.size,
       a.media_type, a.parents, a.status, a.created_at, a.committed_at
FROM perdure.artifacts a JOIN perdure.runs r ON r.run_id = a.run_id
WHERE a.status = 'uploaded'
  AND (r.fence <> a.fence OR r.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
ORDER BY a.id
LIMIT %(limit)s;

-- name: delete_artifact
DELETE FROM perdure.artifacts WHERE id = %(id)s RETURNING tenant_id, digest;

-- name: digest_in_use
SELECT 1 AS used WHERE EXISTS (
    SELECT 1 FROM perdure.artifacts WHERE tenant_id = %(tenant_id)s AND digest = %(digest)s)
  OR EXISTS (
    SELECT 1 FROM perdure.messages
    WHERE tenant_id = %(tenant_id)s AND content_artifact IS NOT NULL
      AND content_artifact::text LIKE %(pattern)s);

-- Retention and erasure (0011, 0012) ---------------------------------------------------------

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

-- name: thread_has_live_run
SELECT 1 AS live FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s AND run_id <> %(run_id)s
  AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
LIMIT 1;

-- name: thread_runs
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

-- name: insert_erasure
INSERT INTO perdure.erasures (tenant_id, thread_id, run_id, counts, erased_by, at)
VALUES (%(tenant_id)s, %(thread_id)s, %(run_id)s, %(counts)s::json, %(by)s, %(now)s);

-- Deleting many runs at once (gc): one statement per table for a batch of runs.

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
