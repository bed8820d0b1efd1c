-- Named queries for the PostgreSQL store. Each starts with a "-- name: NAME" line and uses
-- %(named)s parameters. Loaded by perdure.store.queries; never built from strings.
-- Columns are listed, never "*", so a prepared statement keeps its shape when a later
-- migration adds a column.

-- name: configure_session
SELECT set_config('synchronous_commit', 'on', false),
       set_config('TimeZone', 'UTC', false);

-- name: insert_run
-- The run takes the next place in its thread's queue. A conflict on the idempotency key, or on
-- the place a concurrent creator took a moment ago (the insert waits for it to commit), inserts
-- nothing; the engine then tells the two apart.
INSERT INTO perdure.runs (run_id, tenant_id, thread_id, workflow, status, next_step, release,
                          idempotency_key, budget, workflow_version, state_schema, state_seal,
                          thread_seq, created_at, updated_at, parent_run_id, child_key)
VALUES (%(run_id)s, %(tenant_id)s, %(thread_id)s, %(workflow)s, 'PENDING', %(next_step)s,
        %(release)s::json, %(idempotency_key)s, %(budget)s::json, %(workflow_version)s,
        %(state_schema)s, %(state_seal)s,
        (SELECT COALESCE(MAX(thread_seq), 0) + 1 FROM perdure.runs
         WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s),
        %(now)s, %(now)s, %(parent_run_id)s, %(child_key)s)
ON CONFLICT DO NOTHING
RETURNING run_id;

-- name: run_by_key
SELECT run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner,
       lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at,
       wake_at, step_attempts, retry_since, waiting, budget, workflow_version, state_schema,
       state_seal
FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND idempotency_key = %(idempotency_key)s;

-- name: get_run
SELECT run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner,
       lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at,
       wake_at, step_attempts, retry_since, waiting, budget, workflow_version, state_schema,
       state_seal
FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: list_runs
SELECT run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner,
       lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at,
       wake_at, step_attempts, retry_since, waiting, budget, workflow_version, state_schema,
       state_seal
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
  AND (lease_until IS NULL OR lease_until < %(now)s OR owner = ANY (%(dead_owners)s::text[]))
  AND (wake_at IS NULL OR wake_at <= %(now)s)
  AND workflow = ANY (%(workflows)s::text[])
  AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)
  AND NOT EXISTS (SELECT 1 FROM perdure.runs AS ahead  -- one writer per thread: only its
                  WHERE ahead.tenant_id = runs.tenant_id  -- oldest unfinished run may be claimed
                    AND ahead.thread_id = runs.thread_id
                    AND ahead.thread_seq < runs.thread_seq
                    AND ahead.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
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
  AND (lease_until IS NULL OR lease_until < %(now)s OR owner = ANY (%(dead_owners)s::text[]))
  AND (wake_at IS NULL OR wake_at <= %(now)s)
  AND workflow = ANY (%(workflows)s::text[])
  AND NOT EXISTS (SELECT 1 FROM perdure.runs AS ahead  -- one writer per thread: only its
                  WHERE ahead.tenant_id = runs.tenant_id  -- oldest unfinished run may be claimed
                    AND ahead.thread_id = runs.thread_id
                    AND ahead.thread_seq < runs.thread_seq
                    AND ahead.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
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
  AND NOT EXISTS (SELECT 1 FROM perdure.runs AS ahead  -- one writer per thread: only its
                  WHERE ahead.tenant_id = runs.tenant_id  -- oldest unfinished run may be claimed
                    AND ahead.thread_id = runs.thread_id
                    AND ahead.thread_seq < runs.thread_seq
                    AND ahead.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
RETURNING run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence,
          owner, lease_until, release, idempotency_key, result, error, steps_done, created_at,
          updated_at, wake_at, step_attempts, retry_since, waiting, budget, workflow_version,
          state_schema, state_seal;

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
    state_seal = COALESCE(%(state_seal)s::text, state_seal),
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
          state_schema, state_seal;

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
          state_schema, state_seal;

-- name: lock_run
-- The run's row, locked until the transaction ends (a signal and a commit that would wait for
-- it take turns, so a signal is never left in the inbox of a run that waits for it).
SELECT run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner,
       lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at,
       wake_at, step_attempts, retry_since, waiting, budget, workflow_version, state_schema,
       state_seal
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
                              tool_call_id, at)
VALUES (%(tenant_id)s, %(thread_id)s,
        (SELECT COALESCE(MAX(seq), 0) + 1 FROM perdure.messages
         WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s),
        %(run_id)s, %(role)s, %(content)s, %(tool_calls)s::json, %(tool_call_id)s, %(at)s);

-- name: list_messages
SELECT seq, run_id, role, content, tool_calls, tool_call_id, at
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
       created_at, updated_at, deadline
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
    deadline = CASE WHEN %(status)s = 'executing' THEN %(deadline)s::timestamptz
                    ELSE deadline END,
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
          created_at, updated_at, deadline;

-- name: list_effects
SELECT effect_key, tenant_id, run_id, step, step_seq, name, target, operation, request_hash,
       request, status, attempts, result, receipt, last_error, compensator, resolution,
       created_at, updated_at, deadline
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
    state_seal = COALESCE(%(state_seal)s::text, state_seal),
    waiting = NULL, wake_at = NULL,       -- no wait left
    step_attempts = 0, retry_since = NULL,  -- no retry pending
    owner = NULL, lease_until = NULL,       -- the lease is free: any worker may claim the run
    state_version = state_version + 1, updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
  AND status = %(expected_status)s AND state_version = %(expected_version)s
RETURNING run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence,
          owner, lease_until, release, idempotency_key, result, error, steps_done, created_at,
          updated_at, wake_at, step_attempts, retry_since, waiting, budget, workflow_version,
          state_schema, state_seal;

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
    state_seal = COALESCE(%(state_seal)s::text, state_seal),
    state_version = state_version + 1,
    updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
  AND fence = %(fence)s AND state_version = %(expected_version)s AND status = 'RUNNING'
RETURNING run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence,
          owner, lease_until, release, idempotency_key, result, error, steps_done, created_at,
          updated_at, wake_at, step_attempts, retry_since, waiting, budget, workflow_version,
          state_schema, state_seal;

-- name: delete_field
DELETE FROM perdure.state_fields
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND field = %(field)s;

-- name: scan_runs
SELECT run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner,
       lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at,
       wake_at, step_attempts, retry_since, waiting, budget, workflow_version, state_schema,
       state_seal
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
INSERT INTO perdure.workers (owner, host, pid, concurrency, runs_held, started_at, last_beat,
                             beat_seconds)
VALUES (%(owner)s, %(host)s, %(pid)s, %(concurrency)s, %(runs_held)s, %(now)s, %(now)s,
        %(beat_seconds)s)
ON CONFLICT (owner) DO UPDATE
SET runs_held = excluded.runs_held, concurrency = excluded.concurrency,
    last_beat = excluded.last_beat, beat_seconds = excluded.beat_seconds, stopped_at = NULL;

-- name: worker_stopped
UPDATE perdure.workers SET stopped_at = %(now)s, runs_held = 0 WHERE owner = %(owner)s;

-- name: list_workers
SELECT * FROM perdure.workers
WHERE (stopped_at IS NULL AND last_beat > %(since)s) OR stopped_at > %(since)s
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

-- name: thread_runs
-- The thread's unfinished runs in queue order: the first holds the thread.
SELECT run_id, status, owner, lease_until FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s
  AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
ORDER BY thread_seq;

-- name: lock_thread_runs
-- thread_runs, each row locked until the transaction ends: a message from outside and the
-- boundary of the thread's run take turns, so a message never waits in the inbox of a run
-- that has just ended. (No LIMIT: a locked row that ended meanwhile drops out, the rest stay.)
SELECT run_id, status, owner, lease_until FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s
  AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
ORDER BY thread_seq
FOR UPDATE;

-- name: thread_policy
SELECT policy FROM perdure.threads
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s;

-- name: set_thread_policy
INSERT INTO perdure.threads (tenant_id, thread_id, policy, updated_at)
VALUES (%(tenant_id)s, %(thread_id)s, %(policy)s, %(now)s)
ON CONFLICT (tenant_id, thread_id) DO UPDATE
SET policy = excluded.policy, updated_at = excluded.updated_at;

-- name: interrupt_run
-- A run ahead of an interrupting start is asked to stop at its next boundary (the lease, if
-- any, stays with its worker, which finishes the cancel).
UPDATE perdure.runs
SET status = 'CANCEL_REQUESTED',
    state_version = state_version + 1,
    wake_at = NULL,
    updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND status = %(expected_status)s
  AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED', 'CANCEL_REQUESTED')
RETURNING run_id;

-- name: insert_inbox
INSERT INTO perdure.thread_inbox (tenant_id, thread_id, run_id, role, content, tool_calls,
                                  tool_call_id, received_at)
VALUES (%(tenant_id)s, %(thread_id)s, %(run_id)s, %(role)s, %(content)s,
        %(tool_calls)s::json, %(tool_call_id)s, %(now)s);

-- name: inbox_pending
-- Whether input waits for this moment: messages from outside any run, and (when run_id is
-- given) the messages that run was started with.
SELECT EXISTS (SELECT 1 FROM perdure.thread_inbox
               WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s
                 AND delivered_at IS NULL
                 AND (run_id IS NULL OR run_id = %(run_id)s::text)) AS pending;

-- name: deliver_inbox
-- The waiting input joins the thread's messages, in the order it arrived (the caller holds the
-- thread, so the numbers follow the thread's last one).
INSERT INTO perdure.messages (tenant_id, thread_id, seq, run_id, role, content, tool_calls,
                              tool_call_id, at)
SELECT tenant_id, thread_id,
       (SELECT COALESCE(MAX(seq), 0) FROM perdure.messages
        WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s)
         + ROW_NUMBER() OVER (ORDER BY id),
       run_id, role, content, tool_calls, tool_call_id, %(now)s
FROM perdure.thread_inbox
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s AND delivered_at IS NULL
  AND (run_id IS NULL OR run_id = %(run_id)s::text)
ORDER BY id;

-- name: mark_inbox_delivered
UPDATE perdure.thread_inbox SET delivered_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s AND delivered_at IS NULL
  AND (run_id IS NULL OR run_id = %(run_id)s::text);

-- name: count_inbox
-- Messages from outside any run that wait (those of a queued run wait for its start; a queued
-- run cancelled before it starts never adds them).
SELECT COUNT(*) AS waiting FROM perdure.thread_inbox
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s AND delivered_at IS NULL
  AND run_id IS NULL;

-- name: get_stream
SELECT s.tenant_id, s.message_id, s.run_id, s.attempt, s.last_seq, s.finished,
       r.status AS run_status
FROM perdure.streams AS s JOIN perdure.runs AS r ON r.run_id = s.run_id
WHERE s.tenant_id = %(tenant_id)s AND s.message_id = %(message_id)s;

-- name: lock_stream
-- get_stream with the stream's row locked until the transaction ends: writers of one message
-- take turns.
SELECT s.tenant_id, s.message_id, s.run_id, s.attempt, s.last_seq, s.finished,
       r.status AS run_status
FROM perdure.streams AS s JOIN perdure.runs AS r ON r.run_id = s.run_id
WHERE s.tenant_id = %(tenant_id)s AND s.message_id = %(message_id)s
FOR UPDATE OF s;

-- name: insert_stream
-- The first attempt of a message's stream, only from the run's current lease.
INSERT INTO perdure.streams (tenant_id, message_id, run_id, attempt, last_seq, finished,
                             created_at, updated_at)
SELECT %(tenant_id)s, %(message_id)s, %(run_id)s, 1, 0, false, %(now)s, %(now)s
WHERE EXISTS (SELECT 1 FROM perdure.runs
              WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND fence = %(fence)s
                AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
ON CONFLICT DO NOTHING
RETURNING attempt;

-- name: advance_stream
-- Give out %(count)s more numbers to the current attempt (and close it with %(finish)s), only
-- from the run's current lease; returns the last number given out. A new attempt passes
-- new_attempt = attempt + 1, a flush the attempt it writes.
UPDATE perdure.streams
SET attempt = %(new_attempt)s,
    last_seq = last_seq + %(count)s,
    finished = %(finish)s,
    updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND message_id = %(message_id)s AND run_id = %(run_id)s
  AND attempt = %(attempt)s AND NOT finished
  AND EXISTS (SELECT 1 FROM perdure.runs
              WHERE runs.tenant_id = %(tenant_id)s AND runs.run_id = %(run_id)s
                AND runs.fence = %(fence)s
                AND runs.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
RETURNING last_seq;

-- name: insert_stream_entries
-- Entries numbered first, first + 1, ... in the order of the two lists.
INSERT INTO perdure.stream_entries (tenant_id, message_id, seq, attempt, kind, text)
SELECT %(tenant_id)s, %(message_id)s, %(first)s + e.n - 1, %(attempt)s, e.kind, e.text
FROM unnest(%(kinds)s::text[], %(texts)s::text[]) WITH ORDINALITY AS e (kind, text, n);

-- name: list_stream_entries
SELECT seq, attempt, kind, text FROM perdure.stream_entries
WHERE tenant_id = %(tenant_id)s AND message_id = %(message_id)s AND seq > %(after)s
ORDER BY seq
LIMIT %(limit)s;

-- name: listen_streams
LISTEN perdure_stream;

-- name: terminate_sessions
-- The fault drills' outage: end every other perdure connection to this database.
SELECT count(pg_terminate_backend(pid)) AS ended
FROM pg_stat_activity
WHERE datname = current_database() AND application_name = 'perdure'
  AND pid <> pg_backend_pid();

-- name: child_runs
-- The children a run started (ctx.spawn), by key.
SELECT run_id, child_key, workflow, status, result, error, created_at, updated_at
FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND parent_run_id = %(parent_run_id)s
ORDER BY child_key;

-- name: run_parent
SELECT parent_run_id, child_key FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;
