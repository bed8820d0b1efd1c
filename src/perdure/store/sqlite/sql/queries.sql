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

-- name: insert_history
INSERT INTO state_history (run_id, tenant_id, field, step_seq, version, value, appended)
VALUES (:run_id, :tenant_id, :field, :step_seq, :version, :value, :appended);

-- name: get_savepoint
SELECT * FROM savepoints WHERE tenant_id = :tenant_id AND run_id = :run_id AND label = :label;

-- name: insert_savepoint
INSERT INTO savepoints (run_id, tenant_id, label, step_seq, created_by, created_at, expires_at)
VALUES (:run_id, :tenant_id, :label, :step_seq, :by, :now, :expires_at);

-- name: insert_fork
INSERT INTO forks (run_id, tenant_id, source_run_id, step_seq, savepoint, patched, created_by,
                   created_at)
VALUES (:run_id, :tenant_id, :source_run_id, :step_seq, :savepoint, :patched, :by, :now);

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

-- name: digest_in_use
SELECT 1 AS used WHERE EXISTS (
    SELECT 1 FROM artifacts WHERE tenant_id = :tenant_id AND digest = :digest)
  OR EXISTS (
    SELECT 1 FROM messages
    WHERE tenant_id = :tenant_id AND content_artifact IS NOT NULL
      AND content_artifact LIKE :pattern);

-- Retention and erasure (0011, 0012) ---------------------------------------------------------

-- name: insert_erasure
INSERT INTO erasures (tenant_id, thread_id, run_id, counts, erased_by, at)
VALUES (:tenant_id, :thread_id, :run_id, :counts, :by, :now);

-- Deleting many runs at once (gc): one statement per table for a batch of runs.

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

-- name: delete_memory_vectors
-- A put replaces the item's vectors: the old ones go first.
DELETE FROM memory_vectors
WHERE tenant_id = :tenant_id AND namespace = :namespace AND key = :key;

-- name: insert_memory_vector
INSERT INTO memory_vectors (tenant_id, namespace, key, path, dims, vector)
VALUES (:tenant_id, :namespace, :key, :path, :dims, :vector);
