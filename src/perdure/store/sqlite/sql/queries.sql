-- Named queries for the SQLite store. Each starts with a "-- name: NAME" line and uses
-- :named parameters. Loaded by perdure.store.queries; never built from strings. The engine
-- runs the same names on both dialects; the driver's own queries come first.

-- name: configure_connection
-- Every connection: readers never block the writer (WAL), a commit is on disk when it returns,
-- foreign keys are enforced. (The busy timeout is set when the connection opens.)
PRAGMA journal_mode = WAL;
PRAGMA synchronous = FULL;
PRAGMA foreign_keys = ON;

-- name: begin_write
-- Take the write lock at once, so two writers queue instead of deadlocking on an upgrade.
BEGIN IMMEDIATE;

-- name: commit_write
COMMIT;

-- name: rollback_write
ROLLBACK;

-- name: insert_run
INSERT INTO runs (run_id, tenant_id, thread_id, workflow, status, next_step, release,
                  idempotency_key, budget, workflow_version, state_schema, created_at,
                  updated_at)
VALUES (:run_id, :tenant_id, :thread_id, :workflow, 'PENDING', :next_step, :release,
        :idempotency_key, :budget, :workflow_version, :state_schema, :now, :now)
ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
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
ORDER BY created_at DESC, run_id DESC
LIMIT :limit;

-- name: upsert_field
INSERT INTO state_fields (run_id, tenant_id, field, value)
VALUES (:run_id, :tenant_id, :field, :value)
ON CONFLICT (run_id, field) DO UPDATE SET value = excluded.value;

-- name: load_state
SELECT field, value FROM state_fields WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: pick_next
-- The worker's scan: the oldest runnable run (the write lock admits one claimer at a time).
SELECT tenant_id, run_id, owner, status FROM runs
WHERE (status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED')
       OR (status = 'WAITING_EXTERNAL' AND wake_at IS NOT NULL))
  AND (lease_until IS NULL OR lease_until < :now OR owner = :dead_owner)
  AND (wake_at IS NULL OR wake_at <= :now)
  AND workflow IN (SELECT value FROM json_each(:workflows))
  AND (:tenant_id IS NULL OR tenant_id = :tenant_id)
ORDER BY created_at
LIMIT 1;

-- name: pick_run
-- One named run, if it is runnable.
SELECT tenant_id, run_id, owner, status FROM runs
WHERE run_id = :run_id AND (:tenant_id IS NULL OR tenant_id = :tenant_id)
  AND (status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED')
       OR (status = 'WAITING_EXTERNAL' AND wake_at IS NOT NULL))
  AND (lease_until IS NULL OR lease_until < :now OR owner = :dead_owner)
  AND (wake_at IS NULL OR wake_at <= :now)
  AND workflow IN (SELECT value FROM json_each(:workflows));

-- name: claim_run
UPDATE runs
SET owner = :owner,
    lease_until = :lease_until,
    fence = fence + 1,
    state_version = state_version + 1,
    status = CASE WHEN status IN ('PENDING', 'WAITING_EXTERNAL') THEN 'RUNNING' ELSE status END,
    wake_at = NULL,
    updated_at = :now
WHERE tenant_id = :tenant_id AND run_id = :run_id
  AND (status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED')
       OR (status = 'WAITING_EXTERNAL' AND wake_at IS NOT NULL))
  AND (lease_until IS NULL OR lease_until < :now OR owner = :dead_owner)
  AND (wake_at IS NULL OR wake_at <= :now)
RETURNING *;

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
    result = :result,
    error = :error,
    owner = CASE WHEN :keep_lease THEN owner END,
    lease_until = CASE WHEN :keep_lease THEN lease_until END,
    updated_at = :now
WHERE tenant_id = :tenant_id AND run_id = :run_id
  AND fence = :fence AND state_version = :expected_version AND status = 'RUNNING'
RETURNING state_version, steps_done, thread_id;

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
SELECT * FROM messages WHERE tenant_id = :tenant_id AND thread_id = :thread_id ORDER BY seq;

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
INSERT INTO effects (effect_key, tenant_id, run_id, step, step_seq, name, target, operation,
                     request_hash, request, status, attempts, compensator, created_at,
                     updated_at)
SELECT :key, :tenant_id, :run_id, :step, :step_seq, :name, :target, :operation,
       :request_hash, :request, 'planned', 0, :compensator, :now, :now
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
INSERT INTO workers (owner, host, pid, concurrency, runs_held, started_at, last_beat)
VALUES (:owner, :host, :pid, :concurrency, :runs_held, :now, :now)
ON CONFLICT (owner) DO UPDATE
SET runs_held = excluded.runs_held, concurrency = excluded.concurrency,
    last_beat = excluded.last_beat, stopped_at = NULL;

-- name: worker_stopped
UPDATE workers SET stopped_at = :now, runs_held = 0 WHERE owner = :owner;

-- name: list_workers
SELECT * FROM workers
WHERE stopped_at IS NULL OR stopped_at > :since
ORDER BY started_at;

-- name: stuck_runs
SELECT * FROM runs WHERE status = 'RUNNING' AND updated_at < :before ORDER BY updated_at LIMIT :limit;

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

-- History, savepoints, forks (0011) ---------------------------------------------------------

-- name: insert_history
INSERT INTO state_history (run_id, tenant_id, field, step_seq, version, value)
VALUES (:run_id, :tenant_id, :field, :step_seq, :version, :value);

-- name: state_changes
SELECT step_seq, version, field, length(CAST(value AS BLOB)) AS size,
       COALESCE(instr(value, '"__perdure_artifact__"') > 0, 0) AS offloaded
FROM state_history
WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY step_seq, version, field;

-- name: state_at
-- For each field, its latest value at or before the step (the primary key serves both parts).
SELECT h.field, h.value FROM state_history h
WHERE h.tenant_id = :tenant_id AND h.run_id = :run_id AND h.step_seq <= :step_seq
  AND NOT EXISTS (
      SELECT 1 FROM state_history l
      WHERE l.run_id = h.run_id AND l.field = h.field AND l.step_seq <= :step_seq
        AND (l.step_seq > h.step_seq OR (l.step_seq = h.step_seq AND l.version > h.version)));

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

-- name: thread_runs
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
