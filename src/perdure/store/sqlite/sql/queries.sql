-- Named queries for the SQLite store. Each starts with a "-- name: NAME" line and uses
-- :named parameters. Loaded by perdure.store.queries; never built from strings. The engine
-- runs the same names on both dialects; the driver's own queries come first.

-- name: configure_connection
-- Every connection: readers never block the writer (WAL), a commit is on disk when it returns,
-- foreign keys are enforced, and up to 16 MB of pages stay cached (SQLite's default is 2 MB,
-- less than one long thread: every load of it would read its pages again). (The busy timeout is
-- set when the connection opens.)
PRAGMA journal_mode = WAL;
PRAGMA synchronous = FULL;
PRAGMA foreign_keys = ON;
PRAGMA cache_size = -16384;

-- name: begin_write
-- Take the write lock at once, so two writers queue instead of deadlocking on an upgrade.
BEGIN IMMEDIATE;

-- name: commit_write
COMMIT;

-- name: rollback_write
ROLLBACK;

-- name: insert_run
-- The run takes the next place in its thread's queue. A conflict on the idempotency key (or,
-- on PostgreSQL, on the place a concurrent creator took) inserts nothing.
INSERT INTO runs (run_id, tenant_id, thread_id, workflow, status, next_step, release,
                  idempotency_key, budget, workflow_version, state_schema, state_seal, thread_seq,
                  created_at, updated_at, parent_run_id, child_key)
VALUES (:run_id, :tenant_id, :thread_id, :workflow, 'PENDING', :next_step, :release,
        :idempotency_key, :budget, :workflow_version, :state_schema, :state_seal,
        (SELECT COALESCE(MAX(thread_seq), 0) + 1 FROM runs
         WHERE tenant_id = :tenant_id AND thread_id = :thread_id),
        :now, :now, :parent_run_id, :child_key)
ON CONFLICT DO NOTHING
RETURNING run_id;

-- name: run_by_key
SELECT * FROM runs WHERE tenant_id = :tenant_id AND idempotency_key = :idempotency_key;

-- name: get_run
SELECT * FROM runs WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: lock_run
-- The run's row for a write that depends on it: the write transaction (BEGIN IMMEDIATE)
-- already holds the database's write lock, so a plain read suffices.
SELECT * FROM runs WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: list_runs
SELECT * FROM runs
WHERE tenant_id = :tenant_id
  AND (:any_status OR status IN (SELECT value FROM json_each(:statuses)))
  AND (:workflow IS NULL OR workflow = :workflow)
  AND (:thread_id IS NULL OR thread_id = :thread_id)
  AND (:since IS NULL OR created_at >= :since)
  AND (:until IS NULL OR created_at < :until)
  AND (:search IS NULL OR instr(run_id, :search) > 0 OR instr(thread_id, :search) > 0
       OR instr(COALESCE(idempotency_key, ''), :search) > 0)
  -- the keyset cursor: strictly after the last run of the page before, in the listing's order.
  -- :after_at is never NULL (the end of time without a cursor), so the first condition is a
  -- range of runs_by_tenant and a deep page starts where the index says, not at the newest run.
  AND created_at <= :after_at
  AND (created_at < :after_at OR :after_run IS NULL OR run_id < :after_run)
ORDER BY created_at DESC, run_id DESC
LIMIT :limit;

-- name: upsert_field
INSERT INTO state_fields (run_id, tenant_id, field, value, log)
VALUES (:run_id, :tenant_id, :field, :value, :log)
ON CONFLICT (run_id, field) DO UPDATE SET value = excluded.value, log = excluded.log;

-- name: load_state
-- Every field's row (step_seq 0) and the tails of the fields kept as logs, in no order (the
-- store orders them, as on PostgreSQL). The store reads each value as its UTF-8 bytes
-- (Tx.binary).
SELECT field, value, log, 0 AS step_seq FROM state_fields
WHERE tenant_id = :tenant_id AND run_id = :run_id
UNION ALL
SELECT field, value, 1, step_seq FROM state_tails
WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: pick_next
-- The worker's scan: the oldest runnable run (the write lock admits one claimer at a time),
-- read in runs_claim_order from the oldest, so it stops at the first it may claim instead of
-- sorting them all (the first condition is that index's own).
SELECT tenant_id, run_id, owner, status FROM runs INDEXED BY runs_claim_order
WHERE (status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED')
       OR (status = 'WAITING_EXTERNAL' AND wake_at IS NOT NULL))
  AND (lease_until IS NULL OR lease_until < :now OR owner IN (SELECT value FROM json_each(:dead_owners)))
  AND (wake_at IS NULL OR wake_at <= :now)
  AND workflow IN (SELECT value FROM json_each(:workflows))
  AND (:tenant_id IS NULL OR tenant_id = :tenant_id)
  AND NOT EXISTS (SELECT 1 FROM runs AS ahead  -- one writer per thread: only its oldest
                  WHERE ahead.tenant_id = runs.tenant_id  -- unfinished run may be claimed
                    AND ahead.thread_id = runs.thread_id
                    AND ahead.thread_seq < runs.thread_seq
                    AND ahead.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
ORDER BY created_at
LIMIT 1;

-- name: pick_run
-- One named run, if it is runnable.
SELECT tenant_id, run_id, owner, status FROM runs
WHERE run_id = :run_id AND (:tenant_id IS NULL OR tenant_id = :tenant_id)
  AND (status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED')
       OR (status = 'WAITING_EXTERNAL' AND wake_at IS NOT NULL))
  AND (lease_until IS NULL OR lease_until < :now OR owner IN (SELECT value FROM json_each(:dead_owners)))
  AND (wake_at IS NULL OR wake_at <= :now)
  AND workflow IN (SELECT value FROM json_each(:workflows))
  AND NOT EXISTS (SELECT 1 FROM runs AS ahead  -- one writer per thread: only its oldest
                  WHERE ahead.tenant_id = runs.tenant_id  -- unfinished run may be claimed
                    AND ahead.thread_id = runs.thread_id
                    AND ahead.thread_seq < runs.thread_seq
                    AND ahead.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'));

-- name: claim_run
-- pending: whether input waits for the run (from outside any run, or what it was started with);
-- BEGIN IMMEDIATE keeps every other writer out, so the answer holds until COMMIT.
UPDATE runs
SET owner = :owner,
    lease_until = :lease_until,
    fence = fence + 1,
    state_version = state_version + 1,
    status = CASE WHEN status IN ('PENDING', 'WAITING_EXTERNAL') THEN 'RUNNING' ELSE status END,
    wake_at = NULL,
    -- a takeover (the lease was still held by a worker that died or stalled) is one more
    -- attempt of the step in progress (0025_add_step_takeovers.sql)
    step_takeovers = CASE WHEN owner IS NULL THEN step_takeovers
                          WHEN takeover_step = steps_done THEN step_takeovers + 1
                          ELSE 1 END,
    takeover_step = CASE WHEN owner IS NULL THEN takeover_step ELSE steps_done END,
updated_at = :now
WHERE tenant_id = :tenant_id AND run_id = :run_id
  AND (status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED')
       OR (status = 'WAITING_EXTERNAL' AND wake_at IS NOT NULL))
  AND (lease_until IS NULL OR lease_until < :now OR owner IN (SELECT value FROM json_each(:dead_owners)))
  AND (wake_at IS NULL OR wake_at <= :now)
  AND NOT EXISTS (SELECT 1 FROM runs AS ahead  -- one writer per thread: only its oldest
                  WHERE ahead.tenant_id = runs.tenant_id  -- unfinished run may be claimed
                    AND ahead.thread_id = runs.thread_id
                    AND ahead.thread_seq < runs.thread_seq
                    AND ahead.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
RETURNING *,
          EXISTS (SELECT 1 FROM thread_inbox AS i
                  WHERE i.tenant_id = runs.tenant_id AND i.thread_id = runs.thread_id
                    AND i.delivered_at IS NULL
                    AND (i.run_id IS NULL OR i.run_id = runs.run_id)) AS pending;

-- name: heartbeat
UPDATE runs SET lease_until = :lease_until
WHERE tenant_id = :tenant_id AND run_id = :run_id AND owner = :owner AND fence = :fence
  AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED');

-- name: release
UPDATE runs SET owner = NULL, lease_until = NULL
WHERE tenant_id = :tenant_id AND run_id = :run_id AND owner = :owner AND fence = :fence
  AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED');

-- name: advance_run
UPDATE runs
SET status = :status,
    next_step = :next_step,
    state_version = state_version + 1,
    steps_done = steps_done + :steps,
    step_attempts = 0,
    retry_since = NULL,
    waiting = :waiting,
    wake_at = :wake_at,
    budget = COALESCE(:budget, budget),
    workflow_version = COALESCE(:workflow_version, workflow_version),
    state_schema = COALESCE(:state_schema, state_schema),
    state_seal = COALESCE(:state_seal, state_seal),
    result = :result,
    error = :error,
    owner = CASE WHEN :keep_lease THEN owner END,
    lease_until = CASE WHEN :keep_lease THEN lease_until END,
    updated_at = :now
WHERE tenant_id = :tenant_id AND run_id = :run_id
  AND fence = :fence AND state_version = :expected_version AND status = 'RUNNING'
-- inbox: whether input from outside waits for the thread. BEGIN IMMEDIATE excludes every other
-- writer, so the answer holds until COMMIT and the boundary skips delivery when it is false.
-- parent_run_id: the parent a settled child may wake (NULL: none to look up).
RETURNING state_version, steps_done, thread_id, parent_run_id,
          EXISTS (SELECT 1 FROM thread_inbox AS i
                  WHERE i.tenant_id = runs.tenant_id AND i.thread_id = runs.thread_id
                    AND i.delivered_at IS NULL AND i.run_id IS NULL) AS inbox;

-- name: advance_plain
-- advance_run for a plain boundary (the run goes on RUNNING) on a run with no wake-up time (a
-- claimed run has none): it leaves status, wake_at and the lease unnamed, since SQLite
-- rewrites the entry of every index whose column a SET names, even to the value it had (three
-- pages fewer per step in the WAL). No row when the guard or "no wake-up time" fails; the
-- boundary then takes advance_run.
UPDATE runs
SET next_step = :next_step,
    state_version = state_version + 1,
    steps_done = steps_done + :steps,
    step_attempts = 0,
    retry_since = NULL,
    waiting = NULL,
    budget = COALESCE(:budget, budget),
    workflow_version = COALESCE(:workflow_version, workflow_version),
    state_schema = COALESCE(:state_schema, state_schema),
    state_seal = COALESCE(:state_seal, state_seal),
    result = NULL,
    error = NULL,
    updated_at = :now
WHERE tenant_id = :tenant_id AND run_id = :run_id
  AND fence = :fence AND state_version = :expected_version AND status = 'RUNNING'
  AND wake_at IS NULL
RETURNING state_version, steps_done, thread_id, parent_run_id,
          EXISTS (SELECT 1 FROM thread_inbox AS i
                  WHERE i.tenant_id = runs.tenant_id AND i.thread_id = runs.thread_id
                    AND i.delivered_at IS NULL AND i.run_id IS NULL) AS inbox;

-- name: set_status
UPDATE runs
SET status = :status,
    state_version = state_version + 1,
    wake_at = NULL,
    error = COALESCE(:error, error),
    owner = CASE WHEN :keep_lease THEN owner END,
    lease_until = CASE WHEN :keep_lease THEN lease_until END,
    updated_at = :now
WHERE tenant_id = :tenant_id AND run_id = :run_id
  AND status = :expected_status AND state_version = :expected_version
  AND (:fence IS NULL OR fence = :fence)
  AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
RETURNING *;

-- name: insert_step
INSERT INTO steps (run_id, seq, tenant_id, name, fence, outcome, next_step, started_at,
                   finished_at)
VALUES (:run_id, :seq, :tenant_id, :name, :fence, :outcome, :next_step, :started_at,
        :finished_at);

-- name: list_steps
SELECT * FROM steps WHERE tenant_id = :tenant_id AND run_id = :run_id ORDER BY seq;

-- name: insert_event
INSERT INTO events (tenant_id, run_id, type, step, fence, data, at)
VALUES (:tenant_id, :run_id, :type, :step, :fence, :data, :at);

-- name: list_events
SELECT * FROM events
WHERE tenant_id = :tenant_id AND run_id = :run_id AND seq > :after
ORDER BY seq
LIMIT :limit;

-- name: insert_message
INSERT INTO messages (tenant_id, thread_id, seq, run_id, role, content, tool_calls,
                      tool_call_id, at, step_seq, content_artifact)
VALUES (:tenant_id, :thread_id,
        (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages
         WHERE tenant_id = :tenant_id AND thread_id = :thread_id),
        :run_id, :role, :content, :tool_calls, :tool_call_id, :at, :step_seq, :content_artifact);

-- name: list_messages
-- Read as tuples (rows.message_from_values unpacks the columns in this order).
-- Only the columns a Message is made of: a long thread's load spends its time handing over
-- column values (2,000 messages: about 1 ms for the three it does not need).
SELECT seq, run_id, role, content, tool_calls, tool_call_id, at, content_artifact
FROM messages WHERE tenant_id = :tenant_id AND thread_id = :thread_id AND seq > :after
ORDER BY seq;

-- name: create_migrations_table
CREATE TABLE IF NOT EXISTS perdure_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at TEXT NOT NULL
);

-- name: applied_migrations
SELECT version, name, checksum FROM perdure_migrations ORDER BY version;

-- name: record_migration
INSERT INTO perdure_migrations (version, name, checksum, applied_at)
VALUES (:version, :name, :checksum, :now);

-- name: migrations_table_exists
SELECT EXISTS (SELECT 1 FROM sqlite_master
               WHERE type = 'table' AND name = 'perdure_migrations') AS present;

-- name: create_schema
-- Nothing to do: the database file is the namespace.
SELECT 1;

-- name: defer_run
UPDATE runs
SET wake_at = :wake_at,
    step_attempts = :step_attempts,
    retry_since = COALESCE(retry_since, :now),
    owner = NULL,
    lease_until = NULL,
    state_version = state_version + 1,
    updated_at = :now
WHERE tenant_id = :tenant_id AND run_id = :run_id
  AND fence = :fence AND state_version = :expected_version AND status = 'RUNNING'
RETURNING *;

-- name: insert_effect
-- :status is 'planned' (attempts 0), or 'executing' (attempts 1, the attempt's :deadline) for an
-- intent folded with the move that starts its first attempt.
INSERT INTO effects (effect_key, tenant_id, run_id, step, step_seq, name, target, operation,
                     request_hash, request, status, attempts, compensator, created_at,
                     updated_at, deadline)
SELECT :key, :tenant_id, :run_id, :step, :step_seq, :name, :target, :operation,
       :request_hash, :request, :status, :attempts, :compensator, :now, :now, :deadline
WHERE EXISTS (SELECT 1 FROM runs
              WHERE tenant_id = :tenant_id AND run_id = :run_id AND fence = :fence
                AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
ON CONFLICT (effect_key) DO NOTHING;

-- name: get_effect
SELECT * FROM effects WHERE tenant_id = :tenant_id AND effect_key = :key;

-- name: update_effect
UPDATE effects
SET status = :status,
    attempts = attempts + :attempts_delta,
    result = COALESCE(:result, result),
    receipt = COALESCE(:receipt, receipt),
    last_error = COALESCE(:error, last_error),
    resolution = COALESCE(:resolution, resolution),
    deadline = CASE WHEN :status = 'executing' THEN :deadline ELSE deadline END,
    updated_at = :now
WHERE tenant_id = :tenant_id AND effect_key = :key AND status = :expected_status
  AND (:fence IS NULL OR EXISTS (
        SELECT 1 FROM runs
        WHERE runs.tenant_id = :tenant_id AND runs.run_id = effects.run_id
          AND runs.fence = :fence AND runs.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')))
RETURNING *;

-- name: list_effects
SELECT * FROM effects
WHERE tenant_id = :tenant_id
  AND (:run_id IS NULL OR run_id = :run_id)
  AND (:any_status OR status IN (SELECT value FROM json_each(:statuses)))
ORDER BY id
LIMIT :limit;

-- name: insert_approval
INSERT INTO approvals (tenant_id, run_id, step, role, request, on_approve, on_reject, status,
                       requested_at)
VALUES (:tenant_id, :run_id, :step, :role, :request, :on_approve, :on_reject, 'pending', :now);

-- name: list_approvals
SELECT * FROM approvals
WHERE tenant_id = :tenant_id
  AND (:run_id IS NULL OR run_id = :run_id)
  AND (NOT :pending OR status = 'pending')
ORDER BY id;

-- name: get_approval
SELECT * FROM approvals WHERE tenant_id = :tenant_id AND id = :id;

-- name: approval_by_request
SELECT * FROM approvals WHERE tenant_id = :tenant_id AND request_id = :request_id;

-- name: decide_approval
UPDATE approvals
SET status = :status, decided_by = :by, decided_role = :role, comment = :comment,
    request_id = :request_id, decided_at = :now
WHERE tenant_id = :tenant_id AND id = :id AND status = 'pending'
RETURNING *;

-- name: wake_run
UPDATE runs
SET status = 'RUNNING',
    next_step = :next_step,
    waiting = NULL,
    wake_at = NULL,
    owner = NULL,
    lease_until = NULL,
    state_version = state_version + 1,
    updated_at = :now
WHERE tenant_id = :tenant_id AND run_id = :run_id AND status = :expected_status
RETURNING *;

-- name: insert_signal
INSERT INTO signals (tenant_id, run_id, signal_id, name, payload, received_at)
VALUES (:tenant_id, :run_id, :signal_id, :name, :payload, :now)
ON CONFLICT (tenant_id, run_id, signal_id) DO NOTHING;

-- name: get_signal
SELECT * FROM signals WHERE tenant_id = :tenant_id AND run_id = :run_id AND signal_id = :signal_id;

-- name: first_unconsumed_signal
SELECT * FROM signals
WHERE tenant_id = :tenant_id AND run_id = :run_id AND name = :name AND consumed_at IS NULL
ORDER BY id
LIMIT 1;

-- name: consume_signal
UPDATE signals SET consumed_at = :now WHERE id = :id AND consumed_at IS NULL;

-- name: list_signals
SELECT * FROM signals WHERE tenant_id = :tenant_id AND run_id = :run_id ORDER BY id;

-- name: reopen_run
UPDATE runs
SET status = 'RUNNING',
    next_step = :next_step,
    budget = COALESCE(:budget, budget),
    state_seal = COALESCE(:state_seal, state_seal),
    waiting = NULL, wake_at = NULL,       -- no wait left
    step_attempts = 0, retry_since = NULL,  -- no retry pending
    owner = NULL, lease_until = NULL,       -- the lease is free: any worker may claim the run
    state_version = state_version + 1, updated_at = :now
WHERE tenant_id = :tenant_id AND run_id = :run_id
  AND status = :expected_status AND state_version = :expected_version
RETURNING *;

-- name: reset_planned_effects
UPDATE effects SET attempts = 0, updated_at = :now
WHERE tenant_id = :tenant_id AND run_id = :run_id AND status = 'planned';

-- name: recall_request
SELECT operation, result FROM requests WHERE tenant_id = :tenant_id AND request_id = :request_id;

-- name: remember_request
INSERT INTO requests (tenant_id, request_id, operation, result, created_at)
VALUES (:tenant_id, :request_id, :operation, :result, :now)
ON CONFLICT (tenant_id, request_id) DO NOTHING;

-- name: delete_run_messages
DELETE FROM messages WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: upgrade_run
UPDATE runs
SET next_step = :next_step,
    workflow_version = :workflow_version,
    state_schema = :state_schema,
    state_seal = COALESCE(:state_seal, state_seal),
    state_version = state_version + 1,
    updated_at = :now
WHERE tenant_id = :tenant_id AND run_id = :run_id
  AND fence = :fence AND state_version = :expected_version AND status = 'RUNNING'
RETURNING *;

-- name: delete_field
DELETE FROM state_fields WHERE tenant_id = :tenant_id AND run_id = :run_id AND field = :field;

-- name: scan_runs
SELECT * FROM runs
WHERE status IN (SELECT value FROM json_each(:statuses))
  AND (:workflow IS NULL OR workflow = :workflow)
ORDER BY created_at
LIMIT :limit;

-- name: requeue_too_new
UPDATE runs
SET status = 'RUNNING',
    state_version = state_version + 1,
    owner = NULL,
    lease_until = NULL,
    updated_at = :now
WHERE status = 'QUARANTINED' AND workflow = :workflow
  AND json_extract(error, '$.reason') = 'schema_too_new'
  AND workflow_version <= :workflow_version AND state_schema <= :state_schema
RETURNING tenant_id, run_id;

-- name: worker_beat
INSERT INTO workers (owner, host, pid, concurrency, runs_held, started_at, last_beat,
                     beat_seconds)
VALUES (:owner, :host, :pid, :concurrency, :runs_held, :now, :now, :beat_seconds)
ON CONFLICT (owner) DO UPDATE
SET runs_held = excluded.runs_held, concurrency = excluded.concurrency,
    last_beat = excluded.last_beat, beat_seconds = excluded.beat_seconds, stopped_at = NULL;

-- name: worker_stopped
UPDATE workers SET stopped_at = :now, runs_held = 0 WHERE owner = :owner;

-- name: list_workers
SELECT * FROM workers
WHERE (stopped_at IS NULL AND last_beat > :since) OR stopped_at > :since
ORDER BY started_at;

-- name: stuck_runs
-- (an idle LangGraph thread is RUNNING with no owner: it waits for its next invocation)
SELECT * FROM runs
WHERE status = 'RUNNING' AND updated_at < :before
  AND (:tenant_id IS NULL OR tenant_id = :tenant_id)
  AND NOT (workflow = 'langgraph' AND owner IS NULL)
ORDER BY updated_at LIMIT :limit;

-- name: next_wake
SELECT MIN(wake_at) AS wake_at FROM runs
WHERE wake_at > :now AND status IN ('RUNNING', 'WAITING_EXTERNAL');

-- name: latest_events
SELECT * FROM (
    SELECT * FROM events
    WHERE tenant_id = :tenant_id AND run_id = :run_id
    ORDER BY seq DESC
    LIMIT :limit
)
ORDER BY seq;

-- name: thread_runs
-- The thread's unfinished runs in queue order: the first holds the thread.
SELECT run_id, status, owner, lease_until FROM runs
WHERE tenant_id = :tenant_id AND thread_id = :thread_id
  AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
ORDER BY thread_seq;

-- name: lock_thread_runs
-- thread_runs for a write that depends on them (the write lock already excludes every writer).
SELECT run_id, status, owner, lease_until FROM runs
WHERE tenant_id = :tenant_id AND thread_id = :thread_id
  AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
ORDER BY thread_seq;

-- name: thread_policy
SELECT policy FROM threads WHERE tenant_id = :tenant_id AND thread_id = :thread_id;

-- name: set_thread_policy
INSERT INTO threads (tenant_id, thread_id, policy, updated_at)
VALUES (:tenant_id, :thread_id, :policy, :now)
ON CONFLICT (tenant_id, thread_id) DO UPDATE
SET policy = excluded.policy, updated_at = excluded.updated_at;

-- name: interrupt_run
-- A run ahead of an interrupting start is asked to stop at its next boundary (the lease, if
-- any, stays with its worker, which finishes the cancel).
UPDATE runs
SET status = 'CANCEL_REQUESTED',
    state_version = state_version + 1,
    wake_at = NULL,
    updated_at = :now
WHERE tenant_id = :tenant_id AND run_id = :run_id AND status = :expected_status
  AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED', 'CANCEL_REQUESTED')
RETURNING run_id;

-- name: insert_inbox
INSERT INTO thread_inbox (tenant_id, thread_id, run_id, role, content, tool_calls,
                          tool_call_id, received_at)
VALUES (:tenant_id, :thread_id, :run_id, :role, :content, :tool_calls, :tool_call_id, :now);

-- name: inbox_pending
-- Whether input waits for this moment: messages from outside any run, and (when run_id is
-- given) the messages that run was started with.
SELECT EXISTS (SELECT 1 FROM thread_inbox
               WHERE tenant_id = :tenant_id AND thread_id = :thread_id
                 AND delivered_at IS NULL
                 AND (run_id IS NULL OR run_id = :run_id)) AS pending;

-- name: deliver_inbox
-- The waiting input joins the thread's messages, in the order it arrived (the caller holds the
-- thread, so the numbers follow the thread's last one).
INSERT INTO messages (tenant_id, thread_id, seq, run_id, role, content, tool_calls,
                      tool_call_id, at)
SELECT tenant_id, thread_id,
       (SELECT COALESCE(MAX(seq), 0) FROM messages
        WHERE tenant_id = :tenant_id AND thread_id = :thread_id)
         + ROW_NUMBER() OVER (ORDER BY id),
       run_id, role, content, tool_calls, tool_call_id, :now
FROM thread_inbox
WHERE tenant_id = :tenant_id AND thread_id = :thread_id AND delivered_at IS NULL
  AND (run_id IS NULL OR run_id = :run_id)
ORDER BY id;

-- name: mark_inbox_delivered
UPDATE thread_inbox SET delivered_at = :now
WHERE tenant_id = :tenant_id AND thread_id = :thread_id AND delivered_at IS NULL
  AND (run_id IS NULL OR run_id = :run_id);

-- name: count_inbox
-- Messages from outside any run that wait (those of a queued run wait for its start; a queued
-- run cancelled before it starts never adds them).
SELECT COUNT(*) AS waiting FROM thread_inbox
WHERE tenant_id = :tenant_id AND thread_id = :thread_id AND delivered_at IS NULL
  AND run_id IS NULL;

-- name: get_stream
SELECT s.tenant_id, s.message_id, s.run_id, s.attempt, s.last_seq, s.finished,
       r.status AS run_status
FROM streams AS s JOIN runs AS r ON r.run_id = s.run_id
WHERE s.tenant_id = :tenant_id AND s.message_id = :message_id;

-- name: lock_stream
-- get_stream for a write that depends on it (the write lock already excludes every writer).
SELECT s.tenant_id, s.message_id, s.run_id, s.attempt, s.last_seq, s.finished,
       r.status AS run_status
FROM streams AS s JOIN runs AS r ON r.run_id = s.run_id
WHERE s.tenant_id = :tenant_id AND s.message_id = :message_id;

-- name: insert_stream
-- The first attempt of a message's stream, only from the run's current lease.
INSERT INTO streams (tenant_id, message_id, run_id, attempt, last_seq, finished, created_at,
                     updated_at)
SELECT :tenant_id, :message_id, :run_id, 1, 0, 0, :now, :now
WHERE EXISTS (SELECT 1 FROM runs
              WHERE tenant_id = :tenant_id AND run_id = :run_id AND fence = :fence
                AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
ON CONFLICT DO NOTHING
RETURNING attempt;

-- name: advance_stream
-- Give out :count more numbers to the current attempt (and close it with :finish), only from
-- the run's current lease; returns the last number given out. A new attempt passes
-- :new_attempt (attempt + 1), a flush the attempt it writes; :was_finished is true only to
-- reopen a finished message.
UPDATE streams
SET attempt = :new_attempt,
    last_seq = last_seq + :count,
    finished = :finish,
    updated_at = :now
WHERE tenant_id = :tenant_id AND message_id = :message_id AND run_id = :run_id
  AND attempt = :attempt AND finished = :was_finished
  AND EXISTS (SELECT 1 FROM runs
              WHERE runs.tenant_id = :tenant_id AND runs.run_id = :run_id
                AND runs.fence = :fence
                AND runs.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
RETURNING last_seq;

-- name: insert_stream_entries
-- Entries numbered :first, :first + 1, ... in the order of the two lists.
INSERT INTO stream_entries (tenant_id, message_id, seq, attempt, kind, text)
SELECT :tenant_id, :message_id, :first + k.key, :attempt, k.value, t.value
FROM json_each(:kinds) AS k JOIN json_each(:texts) AS t ON t.key = k.key
ORDER BY k.key;

-- name: list_stream_entries
SELECT seq, attempt, kind, text FROM stream_entries
WHERE tenant_id = :tenant_id AND message_id = :message_id AND seq > :after
ORDER BY seq
LIMIT :limit;
-- Graph checkpoints (perdure.langgraph; store/engine/checkpoints.py).

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

-- name: insert_key
INSERT INTO api_keys (key_id, tenant_id, name, roles, secret_hash, created_at)
VALUES (:key_id, :tenant_id, :name, :roles, :secret_hash, :now);

-- name: live_key_by_name
SELECT key_id FROM api_keys WHERE tenant_id = :tenant_id AND name = :name AND revoked_at IS NULL;

-- name: get_key
SELECT * FROM api_keys WHERE key_id = :key_id;

-- name: list_keys
SELECT * FROM api_keys
WHERE tenant_id = :tenant_id AND (:revoked OR revoked_at IS NULL)
ORDER BY created_at, key_id;

-- name: revoke_key
UPDATE api_keys SET revoked_at = COALESCE(revoked_at, :now)
WHERE tenant_id = :tenant_id AND key_id = :key_id;

-- name: end_key_sessions
UPDATE sessions SET ended_at = :now, ended_why = 'revoked'
WHERE tenant_id = :tenant_id AND key_id = :key_id AND ended_at IS NULL;

-- name: insert_session
INSERT INTO sessions (session_id, tenant_id, key_id, secret_hash, created_at, seen_at,
                      expires_at, idle_seconds)
VALUES (:session_id, :tenant_id, :key_id, :secret_hash, :created_at, :created_at,
        :expires_at, :idle_seconds);

-- name: get_session
SELECT * FROM sessions WHERE session_id = :session_id;

-- name: touch_session
UPDATE sessions SET seen_at = :now
WHERE session_id = :session_id AND ended_at IS NULL AND seen_at < :now;

-- name: end_session
UPDATE sessions SET ended_at = COALESCE(ended_at, :now), ended_why = COALESCE(ended_why, :why)
WHERE tenant_id = :tenant_id AND session_id = :session_id;

-- name: list_sessions
SELECT * FROM sessions
WHERE tenant_id = :tenant_id AND (:key_id IS NULL OR key_id = :key_id)
  AND (:ended OR ended_at IS NULL)
ORDER BY created_at, session_id;

-- name: tenant_events
SELECT e.* FROM events e JOIN runs r ON r.run_id = e.run_id
WHERE e.tenant_id = :tenant_id AND e.seq > :after
  AND (:any_type OR e.type IN (SELECT value FROM json_each(:types)))
  AND (:workflow IS NULL OR r.workflow = :workflow)
ORDER BY e.seq
LIMIT :limit;

-- name: events_since
SELECT seq, tenant_id, run_id FROM events WHERE seq > :after ORDER BY seq LIMIT :limit;

-- name: last_event_seq
SELECT COALESCE(MAX(seq), 0) AS seq FROM events;

-- name: run_counts
SELECT tenant_id, workflow, status, COUNT(*) AS n FROM runs
WHERE (:tenant_id IS NULL OR tenant_id = :tenant_id)
GROUP BY tenant_id, workflow, status
ORDER BY tenant_id, workflow, status;

-- name: runs_by_period
-- Runs of a tenant created since :since, by the UTC hour (:width 13) or day (:width 10) they were
-- created in and their status now; read through runs_by_tenant.
SELECT substr(created_at, 1, :width) AS period, status, COUNT(*) AS n FROM runs
WHERE tenant_id = :tenant_id AND created_at >= :since
GROUP BY period, status
ORDER BY period, status;

-- name: step_timings
-- The committed steps of a tenant's runs created since :since (runs_by_tenant, then each run's
-- steps by their key), newest runs first, at most :limit.
SELECT r.workflow, s.name, s.started_at, s.finished_at
FROM runs AS r JOIN steps AS s ON s.run_id = r.run_id
WHERE r.tenant_id = :tenant_id AND r.created_at >= :since
ORDER BY r.created_at DESC, s.seq
LIMIT :limit;

-- name: effect_counts
SELECT tenant_id, status, COUNT(*) AS n FROM effects
WHERE (:tenant_id IS NULL OR tenant_id = :tenant_id)
GROUP BY tenant_id, status
ORDER BY tenant_id, status;

-- name: runnable_summary
SELECT COUNT(*) AS n, MIN(COALESCE(wake_at, created_at)) AS oldest FROM runs
WHERE (status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED')
       OR (status = 'WAITING_EXTERNAL' AND wake_at IS NOT NULL))
  AND (lease_until IS NULL OR lease_until < :now)
  AND (wake_at IS NULL OR wake_at <= :now);

-- name: spend_counts
SELECT tenant_id, workflow,
       COALESCE(SUM(CAST(json_extract(budget, '$.used.tokens') AS INTEGER)), 0) AS tokens,
       COALESCE(SUM(CAST(json_extract(budget, '$.used.cost') AS REAL)), 0.0) AS cost
FROM runs
WHERE budget IS NOT NULL AND (:tenant_id IS NULL OR tenant_id = :tenant_id)
GROUP BY tenant_id, workflow
ORDER BY tenant_id, workflow;
-- History, savepoints, forks (0011) ---------------------------------------------------------

-- name: insert_history
INSERT INTO state_history (run_id, tenant_id, field, step_seq, version, value, appended)
VALUES (:run_id, :tenant_id, :field, :step_seq, :version, :value, :appended);

-- name: state_changes
SELECT step_seq, version, field, length(CAST(value AS BLOB)) AS size,
       COALESCE(instr(value, '"__perdure_artifact__"') > 0, 0) AS offloaded, appended
FROM state_history
WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY step_seq, version, field;

-- name: state_at
-- For each field, its latest whole value at or before the step, then the tails appended to it
-- up to the step, in order (the primary key serves both parts); the engine joins them.
SELECT h.field, h.value, h.appended FROM state_history h
WHERE h.tenant_id = :tenant_id AND h.run_id = :run_id AND h.step_seq <= :step_seq
  AND NOT EXISTS (
      SELECT 1 FROM state_history l
      WHERE l.run_id = h.run_id AND l.field = h.field AND l.step_seq <= :step_seq
        AND l.appended = 0
        AND (l.step_seq > h.step_seq OR (l.step_seq = h.step_seq AND l.version > h.version)))
ORDER BY h.field, h.step_seq, h.version;

-- name: get_savepoint
SELECT * FROM savepoints WHERE tenant_id = :tenant_id AND run_id = :run_id AND label = :label;

-- name: insert_savepoint
INSERT INTO savepoints (run_id, tenant_id, label, step_seq, created_by, created_at, expires_at)
VALUES (:run_id, :tenant_id, :label, :step_seq, :by, :now, :expires_at);

-- name: list_savepoints
SELECT * FROM savepoints WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY step_seq, created_at;

-- name: insert_fork
INSERT INTO forks (run_id, tenant_id, source_run_id, step_seq, savepoint, patched, created_by,
                   created_at)
VALUES (:run_id, :tenant_id, :source_run_id, :step_seq, :savepoint, :patched, :by, :now);

-- name: get_fork
SELECT * FROM forks WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: run_message_bounds
SELECT MAX(CASE WHEN COALESCE(step_seq, 0) <= :step_seq THEN seq END) AS kept,
       MIN(seq) AS first
FROM messages
WHERE tenant_id = :tenant_id AND thread_id = :thread_id AND run_id = :run_id;

-- Artifacts (0012) ---------------------------------------------------------------------------

-- name: insert_artifact
INSERT INTO artifacts (tenant_id, run_id, step, step_seq, fence, digest, size, media_type,
                       parents, status, created_at, committed_at)
VALUES (:tenant_id, :run_id, :step, :step_seq, :fence, :digest, :size, :media_type, :parents,
        :status, :now, CASE WHEN :status = 'committed' THEN :now END)
RETURNING id;

-- name: commit_artifact
UPDATE artifacts SET status = 'committed', committed_at = :now, step_seq = :step_seq
WHERE id = :id AND tenant_id = :tenant_id AND run_id = :run_id AND fence = :fence
  AND status = 'uploaded';

-- name: list_artifacts
SELECT * FROM artifacts
WHERE tenant_id = :tenant_id
  AND (:run_id IS NULL OR run_id = :run_id)
  AND (:digest IS NULL OR digest = :digest)
ORDER BY id;

-- name: orphan_uploads
SELECT a.* FROM artifacts a JOIN runs r ON r.run_id = a.run_id
WHERE a.status = 'uploaded'
  AND (r.fence <> a.fence OR r.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
ORDER BY a.id
LIMIT :limit;

-- name: delete_artifact
DELETE FROM artifacts WHERE id = :id RETURNING tenant_id, digest;

-- name: digest_in_use
SELECT 1 AS used WHERE EXISTS (
    SELECT 1 FROM artifacts WHERE tenant_id = :tenant_id AND digest = :digest)
  OR EXISTS (
    SELECT 1 FROM messages
    WHERE tenant_id = :tenant_id AND content_artifact IS NOT NULL
      AND content_artifact LIKE :pattern);

-- Retention and erasure (0011, 0012) ---------------------------------------------------------

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

-- name: thread_has_live_run
SELECT 1 AS live FROM runs
WHERE tenant_id = :tenant_id AND thread_id = :thread_id AND run_id <> :run_id
  AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
LIMIT 1;

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

-- name: insert_erasure
INSERT INTO erasures (tenant_id, thread_id, run_id, counts, erased_by, at)
VALUES (:tenant_id, :thread_id, :run_id, :counts, :by, :now);

-- Deleting many runs at once (gc): one statement per table for a batch of runs.

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

-- name: child_runs
-- The children a run started (ctx.spawn), by key.
SELECT run_id, child_key, workflow, status, result, error, created_at, updated_at
FROM runs
WHERE tenant_id = :tenant_id AND parent_run_id = :parent_run_id
ORDER BY child_key;

-- name: run_parent
SELECT parent_run_id, child_key FROM runs
WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- Field logs (0014) --------------------------------------------------------------------------

-- name: insert_tail
INSERT INTO state_tails (run_id, tenant_id, field, step_seq, value)
VALUES (:run_id, :tenant_id, :field, :step_seq, :value);

-- name: delete_tails
DELETE FROM state_tails WHERE tenant_id = :tenant_id AND run_id = :run_id AND field = :field;

-- name: delete_run_state_tails
DELETE FROM state_tails WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: delete_runs_state_tails
DELETE FROM state_tails WHERE run_id IN (SELECT value FROM json_each(:run_ids));

-- name: export_state_tails
SELECT * FROM state_tails WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY field, step_seq;

-- Memory (0018) ------------------------------------------------------------------------------

-- name: upsert_memory
-- A step's put, in its boundary's transaction: a new item at version 1, or the next version.
INSERT INTO memory (tenant_id, namespace, key, value, version, run_id, step_seq, created_at,
                    updated_at, expires_at, ttl_seconds)
VALUES (:tenant_id, :namespace, :key, :value, 1, :run_id, :step_seq, :now, :now, :expires_at,
        :ttl_seconds)
ON CONFLICT (tenant_id, namespace, key) DO UPDATE
SET value = excluded.value, version = memory.version + 1, run_id = excluded.run_id,
    step_seq = excluded.step_seq, updated_at = excluded.updated_at,
    expires_at = excluded.expires_at, ttl_seconds = excluded.ttl_seconds;

-- name: delete_memory
DELETE FROM memory WHERE tenant_id = :tenant_id AND namespace = :namespace AND key = :key;

-- name: get_memory
SELECT namespace, key, value, version, run_id, created_at, updated_at, expires_at,
       ttl_seconds
FROM memory
WHERE tenant_id = :tenant_id AND namespace = :namespace AND key = :key
  AND (expires_at IS NULL OR expires_at > :now);

-- name: search_memory
-- Every live item of a namespace and the namespaces below it ('' : all of the tenant's).
SELECT namespace, key, value, version, run_id, created_at, updated_at, expires_at,
       ttl_seconds
FROM memory
WHERE tenant_id = :tenant_id
  AND (:prefix = '' OR namespace = :prefix
       OR substr(namespace, 1, length(:prefix) + 1) = :prefix || '/')
  AND (expires_at IS NULL OR expires_at > :now)
ORDER BY namespace, key;

-- name: erase_memory
DELETE FROM memory
WHERE tenant_id = :tenant_id
  AND (:prefix = '' OR namespace = :prefix
       OR substr(namespace, 1, length(:prefix) + 1) = :prefix || '/');

-- name: expire_memory
DELETE FROM memory
WHERE (tenant_id, namespace, key) IN (SELECT tenant_id, namespace, key FROM memory
                                      WHERE expires_at IS NOT NULL AND expires_at <= :now
                                      LIMIT :limit);

-- Memory vectors (0023) ----------------------------------------------------------------------

-- name: delete_memory_vectors
-- A put replaces the item's vectors: the old ones go first.
DELETE FROM memory_vectors
WHERE tenant_id = :tenant_id AND namespace = :namespace AND key = :key;

-- name: insert_memory_vector
INSERT INTO memory_vectors (tenant_id, namespace, key, path, dims, vector)
VALUES (:tenant_id, :namespace, :key, :path, :dims, :vector);

-- name: search_memory_vectors
-- Every live item of a namespace and the namespaces below it (as search_memory), once per
-- vector it has (vector NULL for an item without one), ordered by namespace then key.
SELECT m.namespace, m.key, m.value, m.version, m.run_id, m.created_at, m.updated_at,
       m.expires_at, m.ttl_seconds, v.vector
FROM memory m
LEFT JOIN memory_vectors v ON v.tenant_id = m.tenant_id AND v.namespace = m.namespace AND v.key = m.key
WHERE m.tenant_id = :tenant_id
  AND (:prefix = '' OR m.namespace = :prefix
       OR substr(m.namespace, 1, length(:prefix) + 1) = :prefix || '/')
  AND (m.expires_at IS NULL OR m.expires_at > :now)
ORDER BY m.namespace, m.key;

-- name: memory_namespaces
-- The namespaces holding at least one live item of the tenant, in order.
SELECT DISTINCT namespace
FROM memory
WHERE tenant_id = :tenant_id AND (expires_at IS NULL OR expires_at > :now)
ORDER BY namespace;

-- name: refresh_memory_expiry
-- A read that refreshes an item's time to live (an item put without one keeps no expiry).
UPDATE memory SET expires_at = :expires_at
WHERE tenant_id = :tenant_id AND namespace = :namespace AND key = :key
  AND ttl_seconds IS NOT NULL AND expires_at > :now;
