-- Named queries for the PostgreSQL store. Each starts with a "-- name: NAME" line and uses
-- %(named)s parameters. Loaded by perdure.store.queries; never built from strings.
-- Columns are listed, never "*", so a prepared statement keeps its shape when a later
-- migration adds a column.

-- name: configure_session
-- idle_in_transaction_session_timeout (milliseconds as text; '0': none) bounds how long a
-- transaction may wait for its client: a worker frozen inside one (SIGSTOP, a paused VM) loses
-- its session, and with it the row locks that would keep every other worker from its runs. The
-- tcp_keepalives_* settings make the server notice a client host that is gone or paused.
SELECT set_config('synchronous_commit', 'on', false),
       set_config('TimeZone', 'UTC', false),
       set_config('idle_in_transaction_session_timeout', %(idle_in_transaction)s, false),
       set_config('tcp_keepalives_idle', %(keepalive_idle)s, false),
       set_config('tcp_keepalives_interval', %(keepalive_interval)s, false),
       set_config('tcp_keepalives_count', '3', false);

-- name: begin_write
-- A write transaction (Driver.write): sent with its first statement, in one pipeline.
BEGIN;

-- name: commit_write
COMMIT;

-- name: rollback_write
ROLLBACK;

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
       wake_at, step_attempts, step_takeovers, takeover_step, retry_since, waiting, budget, workflow_version, state_schema,
       state_seal
FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND idempotency_key = %(idempotency_key)s;

-- name: get_run
SELECT run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner,
       lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at,
       wake_at, step_attempts, step_takeovers, takeover_step, retry_since, waiting, budget, workflow_version, state_schema,
       state_seal
FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: list_runs
SELECT run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner,
       lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at,
       wake_at, step_attempts, step_takeovers, takeover_step, retry_since, waiting, budget, workflow_version, state_schema,
       state_seal
FROM perdure.runs
WHERE tenant_id = %(tenant_id)s
  AND (%(any_status)s OR status = ANY (%(statuses)s::text[]))
  AND (%(workflow)s::text IS NULL OR workflow = %(workflow)s)
  AND (%(thread_id)s::text IS NULL OR thread_id = %(thread_id)s)
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
  AND (%(search)s::text IS NULL OR strpos(run_id, %(search)s) > 0
       OR strpos(thread_id, %(search)s) > 0
       OR strpos(COALESCE(idempotency_key, ''), %(search)s) > 0)
  -- the keyset cursor: strictly after the last run of the page before, in the listing's order.
  -- after_at is never NULL (the end of time without a cursor), so the first condition is a
  -- range of runs_by_tenant and a deep page starts where the index says, not at the newest run.
  AND created_at <= %(after_at)s
  AND (created_at < %(after_at)s OR %(after_run)s::text IS NULL OR run_id < %(after_run)s)
ORDER BY created_at DESC, run_id DESC
LIMIT %(limit)s;

-- name: upsert_field
INSERT INTO perdure.state_fields (run_id, tenant_id, field, value, log)
VALUES (%(run_id)s, %(tenant_id)s, %(field)s, %(value)s, %(log)s::boolean)
ON CONFLICT (run_id, field) DO UPDATE SET value = EXCLUDED.value, log = EXCLUDED.log;

-- name: load_state
-- Every field's row (step_seq 0) and the tails of the fields kept as logs, in no order (the
-- store orders them: a sort here would copy every value it passes, a whole field included).
-- The store reads the rows in binary format, each value as its UTF-8 bytes (Tx.binary).
SELECT field, value, log, 0 AS step_seq FROM perdure.state_fields
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
UNION ALL
SELECT field, value, true, step_seq FROM perdure.state_tails
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: claim_next
-- The worker's scan and its claim in one statement (one round trip): the oldest runnable run
-- that no other transaction has locked, its new lease, fence and status, and its events.
-- Concurrent claimers skip each other's rows instead of waiting, so they never take the same
-- run. The scan is meant to read runs_claim_order from the oldest and stop at the first run
-- it may claim, instead of sorting them all: the first condition is that index's own, and the
-- others are inside a CASE, which the planner counts as an unknown, not as selective. Written
-- as plain conditions, a table not analysed yet made the planner expect one matching run and
-- sort them all (5,000 queued runs: 26 ms per claim, against 0.1 ms). pending: whether input
-- waits for the run (from outside any run, or what it was started with); the caller delivers
-- it before the run's first step. The events are numbered in their order (claimed, then the
-- status change if there is one).
WITH picked AS (
    SELECT tenant_id AS picked_tenant, run_id AS picked_run, owner AS previous_owner,
           status AS previous_status
    FROM perdure.runs
    WHERE (status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED')
           OR (status = 'WAITING_EXTERNAL' AND wake_at IS NOT NULL))
      AND CASE WHEN (lease_until IS NULL OR lease_until < %(now)s
                     OR owner = ANY (%(dead_owners)s::text[]))
                AND (wake_at IS NULL OR wake_at <= %(now)s)
                AND workflow = ANY (%(workflows)s::text[])
                AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)
                -- one writer per thread: only its oldest unfinished run may be claimed (a graph
                -- thread's run has no place in a queue), asked as an ordered read of
                -- runs_thread_queue (a NOT EXISTS read every run of the table per candidate)
                AND (thread_seq IS NULL
                     OR thread_seq = (SELECT ahead.thread_seq FROM perdure.runs AS ahead
                                      WHERE ahead.tenant_id = runs.tenant_id
                                        AND ahead.thread_id = runs.thread_id
                                        AND ahead.status
                                            NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
                                      ORDER BY ahead.thread_seq
                                      LIMIT 1))
           THEN true ELSE false END
    ORDER BY created_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED
),
claimed AS (
    UPDATE perdure.runs
    SET owner = %(owner)s,
        lease_until = %(lease_until)s,
        fence = fence + 1,
        state_version = state_version + 1,
        status = CASE WHEN status IN ('PENDING', 'WAITING_EXTERNAL') THEN 'RUNNING'
                      ELSE status END,
        wake_at = NULL,
        -- a takeover (the lease was still held by a worker that died or stalled) is one more
        -- attempt of the step in progress (0025_add_step_takeovers.sql)
        step_takeovers = CASE WHEN owner IS NULL THEN step_takeovers
                              WHEN takeover_step = steps_done THEN step_takeovers + 1
                              ELSE 1 END,
        takeover_step = CASE WHEN owner IS NULL THEN takeover_step ELSE steps_done END,
        updated_at = %(now)s
    FROM picked
    WHERE tenant_id = picked_tenant AND run_id = picked_run
    RETURNING run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence,
              owner, lease_until, release, idempotency_key, result, error, steps_done,
              created_at, updated_at, wake_at, step_attempts, step_takeovers, takeover_step, retry_since, waiting, budget,
              workflow_version, state_schema, state_seal, previous_owner, previous_status,
              EXISTS (SELECT 1 FROM perdure.thread_inbox AS i
                      WHERE i.tenant_id = runs.tenant_id AND i.thread_id = runs.thread_id
                        AND i.delivered_at IS NULL
                        AND (i.run_id IS NULL OR i.run_id = runs.run_id)) AS pending
),
noted AS (
    INSERT INTO perdure.events (tenant_id, run_id, type, step, fence, data, at)
    SELECT c.tenant_id, c.run_id, e.type, NULL, c.fence, e.data, %(now)s
    FROM claimed AS c
    CROSS JOIN LATERAL (VALUES
        (1, 'claimed', json_build_object('owner', c.owner, 'previous_owner', c.previous_owner)),
        (2, 'status', json_build_object('from', c.previous_status, 'to', c.status))
    ) AS e (ord, type, data)
    WHERE e.ord = 1 OR c.status <> c.previous_status
    ORDER BY e.ord
)
SELECT * FROM claimed;

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
  -- one writer per thread: only its oldest unfinished run may be claimed (a graph thread's
  -- run has no place in a queue). Asked as "the first unfinished run of the thread's queue",
  -- an ordered read of runs_thread_queue: asked as a NOT EXISTS, a table not analysed yet got
  -- a plan that read every run for each candidate.
  AND (thread_seq IS NULL
       OR thread_seq = (SELECT ahead.thread_seq FROM perdure.runs AS ahead
                        WHERE ahead.tenant_id = runs.tenant_id
                          AND ahead.thread_id = runs.thread_id
                          AND ahead.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
                        ORDER BY ahead.thread_seq
                        LIMIT 1))
FOR UPDATE;

-- name: claim_run
-- The run pick_next or pick_run locked, in the same transaction: the new lease, fence and
-- status. The pick checked that the run is the first unfinished one of its thread's queue, and
-- that stays true (a run ahead only finishes, never reopens; a new one joins behind), so it is
-- not asked again here. pending: whether input waits for the run (from outside any run, or what
-- it was started with) as the statement began; input posted later waits for the run's next
-- boundary, which a claimed run has.
UPDATE perdure.runs
SET owner = %(owner)s,
    lease_until = %(lease_until)s,
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
updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
RETURNING run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence,
          owner, lease_until, release, idempotency_key, result, error, steps_done, created_at,
          updated_at, wake_at, step_attempts, step_takeovers, takeover_step, retry_since, waiting, budget, workflow_version,
          state_schema, state_seal,
          EXISTS (SELECT 1 FROM perdure.thread_inbox AS i
                  WHERE i.tenant_id = runs.tenant_id AND i.thread_id = runs.thread_id
                    AND i.delivered_at IS NULL
                    AND (i.run_id IS NULL OR i.run_id = runs.run_id)) AS pending;

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
-- inbox: always TRUE here. Input can be posted between this statement and the thread lock the
-- delivery takes, so only the delivery itself, under that lock, can say that none waits.
-- parent_run_id: the parent a settled child may wake (NULL: none to look up).
RETURNING state_version, steps_done, thread_id, parent_run_id, TRUE AS inbox;

-- name: commit_step
-- commit_steps for one run, the guard's four parameters and the rest packed in one JSON object
-- (%(step)s: psycopg converts five parameters instead of seventeen, a large part of a step's
-- client CPU), unpacked into typed columns by json_to_record: a plain step boundary as one statement, one round trip;
-- the guarded run update and, only when the guard matched, the step, its step_completed event
-- ({"seq":N,...}: completed is the rest of that object) and the changed fields with their
-- history. No row: the guard matched nothing and nothing was written. inbox: whether input
-- from outside waited when the statement began; input posted after that waits for the next
-- boundary, and since the run goes on, there is one.
WITH p AS (
    SELECT * FROM json_to_record(%(step)s::json) AS p (
        fence bigint, next_step text,
        budget json, workflow_version integer, state_schema integer, state_seal text,
        name text, outcome text, started_at timestamptz, finished_at timestamptz,
        completed text, fields text[], "values" text[], now timestamptz)
), run AS (
    UPDATE perdure.runs AS r
    SET status = 'RUNNING',
        next_step = p.next_step,
        state_version = r.state_version + 1,
        steps_done = r.steps_done + 1,
        step_attempts = 0,
        retry_since = NULL,
        waiting = NULL,
        wake_at = NULL,
        budget = COALESCE(p.budget, r.budget),
        workflow_version = COALESCE(p.workflow_version, r.workflow_version),
        state_schema = COALESCE(p.state_schema, r.state_schema),
        state_seal = COALESCE(p.state_seal, r.state_seal),
        result = NULL,
        error = NULL,
        updated_at = p.now
    FROM p
    -- the guard as parameters of their own, as in every guarded update: the run is found
    -- through its primary key whatever the statistics say (compared with p's columns, it was
    -- planned as a scan of every RUNNING run before ANALYZE)
    WHERE r.tenant_id = %(tenant_id)s AND r.run_id = %(run_id)s
      AND r.fence = %(fence)s AND r.state_version = %(expected_version)s
      AND r.status = 'RUNNING'
    RETURNING r.tenant_id, r.run_id, r.thread_id, r.state_version, r.steps_done
), step AS (
    INSERT INTO perdure.steps (run_id, seq, tenant_id, name, fence, outcome, next_step,
                               started_at, finished_at)
    SELECT run.run_id, run.steps_done, run.tenant_id, p.name, p.fence, p.outcome, p.next_step,
           p.started_at, p.finished_at
    FROM run, p
), completed AS (
    INSERT INTO perdure.events (tenant_id, run_id, type, step, fence, data, at)
    SELECT run.tenant_id, run.run_id, 'step_completed', p.name, p.fence,
           ('{"seq":' || run.steps_done || ',' || substr(p.completed, 2))::json, p.now
    FROM run, p
), changed AS (
    SELECT f.field, f.value FROM p, unnest(p.fields, p."values") AS f (field, value)
), fields AS (
    INSERT INTO perdure.state_fields (run_id, tenant_id, field, value, log)
    SELECT run.run_id, run.tenant_id, changed.field, changed.value, false FROM run, changed
    ON CONFLICT (run_id, field) DO UPDATE SET value = EXCLUDED.value, log = EXCLUDED.log
), history AS (
    INSERT INTO perdure.state_history (run_id, tenant_id, field, step_seq, version, value,
                                       appended)
    SELECT run.run_id, run.tenant_id, changed.field, run.steps_done, run.state_version,
           changed.value, false
    FROM run, changed
)
SELECT run_id, state_version, thread_id,
       EXISTS (SELECT 1 FROM perdure.thread_inbox AS i
               WHERE i.tenant_id = run.tenant_id AND i.thread_id = run.thread_id
                 AND i.delivered_at IS NULL AND i.run_id IS NULL) AS inbox
FROM run;

-- name: commit_steps
-- Plain step boundaries of one or more runs (each run goes on RUNNING; no artifacts,
-- savepoints or field logs) as one statement, so one transaction and one round trip: each
-- run's guarded update (runs locked in (tenant, run) order first, so two overlapping groups
-- take their locks in one order) and, for each run whose guard matched, its step, its
-- step_completed event ({"seq":N,...}: completed holds the rest of that object), its changed
-- fields with their history and its messages. The runs, the changed fields and the messages
-- come as three JSON arrays of objects (one parameter each: cheaper to send than an array per
-- column). A run whose guard matched nothing returns no row and has nothing written. inbox:
-- whether input from outside waited on the run's thread when the statement began; input
-- posted after that waits for the next boundary, which the run has.
-- Messages are numbered after their thread's last one under the thread's lock (lock_thread),
-- taken in (tenant, run) order as the transaction path takes them; each insert waits for its
-- lock (it joins the lock's row). The statement's snapshot is older than those locks: if
-- another writer added messages to a thread while this one waited, the numbers collide on the
-- thread's unique key (messages_tenant_id_thread_id_seq_key), the statement fails whole, and
-- the engine commits each boundary again by itself.
WITH given AS (
    SELECT * FROM json_to_recordset(%(runs)s::json) AS g (
        tenant_id text, run_id text, fence bigint, expected_version bigint, next_step text,
        budget text, workflow_version integer, state_schema integer, state_seal text,
        name text, outcome text, started_at timestamptz, finished_at timestamptz,
        completed text)
), locked AS (
    SELECT r.run_id FROM perdure.runs AS r
    JOIN given AS g ON g.tenant_id = r.tenant_id AND g.run_id = r.run_id
    ORDER BY r.tenant_id, r.run_id
    FOR NO KEY UPDATE OF r
), run AS (
    UPDATE perdure.runs AS r
    SET status = 'RUNNING',
        next_step = g.next_step,
        state_version = r.state_version + 1,
        steps_done = r.steps_done + 1,
        step_attempts = 0,
        retry_since = NULL,
        waiting = NULL,
        wake_at = NULL,
        budget = COALESCE(g.budget::json, r.budget),
        workflow_version = COALESCE(g.workflow_version, r.workflow_version),
        state_schema = COALESCE(g.state_schema, r.state_schema),
        state_seal = COALESCE(g.state_seal, r.state_seal),
        result = NULL,
        error = NULL,
        updated_at = %(now)s
    FROM given AS g, locked AS l
    WHERE l.run_id = r.run_id AND g.tenant_id = r.tenant_id AND g.run_id = r.run_id
      AND r.fence = g.fence AND r.state_version = g.expected_version AND r.status = 'RUNNING'
    RETURNING r.tenant_id, r.run_id, r.thread_id, r.state_version, r.steps_done, g.fence,
              g.name, g.outcome, g.next_step, g.started_at, g.finished_at, g.completed
), step AS (
    INSERT INTO perdure.steps (run_id, seq, tenant_id, name, fence, outcome, next_step,
                               started_at, finished_at)
    SELECT run_id, steps_done, tenant_id, name, fence, outcome, next_step, started_at,
           finished_at
    FROM run
), completed AS (
    INSERT INTO perdure.events (tenant_id, run_id, type, step, fence, data, at)
    SELECT tenant_id, run_id, 'step_completed', name, fence,
           ('{"seq":' || steps_done || ',' || substr(completed, 2))::json, %(now)s
    FROM run
), changed AS (
    SELECT run.run_id, run.tenant_id, run.steps_done, run.state_version, c.field, c.value
    FROM json_to_recordset(%(changed)s::json) AS c (run_id text, field text, value text)
    JOIN run ON run.run_id = c.run_id
), fields AS (
    INSERT INTO perdure.state_fields (run_id, tenant_id, field, value, log)
    SELECT run_id, tenant_id, field, value, false FROM changed
    ON CONFLICT (run_id, field) DO UPDATE SET value = EXCLUDED.value, log = EXCLUDED.log
), history AS (
    INSERT INTO perdure.state_history (run_id, tenant_id, field, step_seq, version, value,
                                       appended)
    SELECT run_id, tenant_id, field, steps_done, state_version, value, false FROM changed
), given_messages AS (
    SELECT value, value->>'run_id' AS run_id, (value->>'ord')::bigint AS ord
    FROM json_array_elements(%(messages)s::json)
), thread AS (
    SELECT t.run_id,
           pg_advisory_xact_lock(1918989411, hashtext(t.tenant_id || '/' || t.thread_id)) AS held
    FROM (SELECT tenant_id, run_id, thread_id FROM run
          WHERE run_id IN (SELECT run_id FROM given_messages)
          ORDER BY tenant_id, run_id OFFSET 0) AS t
), messages AS (
    INSERT INTO perdure.messages (tenant_id, thread_id, seq, run_id, role, content, tool_calls,
                                  tool_call_id, at, step_seq, content_artifact)
    SELECT run.tenant_id, run.thread_id,
           (SELECT COALESCE(MAX(seq), 0) FROM perdure.messages
            WHERE tenant_id = run.tenant_id AND thread_id = run.thread_id) + m.ord,
           run.run_id, m.value->>'role', m.value->>'content', m.value->'tool_calls',
           m.value->>'tool_call_id', run.finished_at, run.steps_done,
           m.value->'content_artifact'
    FROM given_messages AS m
    JOIN thread ON thread.run_id = m.run_id
    JOIN run ON run.run_id = m.run_id
)
SELECT run_id, state_version, thread_id,
       EXISTS (SELECT 1 FROM perdure.thread_inbox AS i
               WHERE i.tenant_id = run.tenant_id AND i.thread_id = run.thread_id
                 AND i.delivered_at IS NULL AND i.run_id IS NULL) AS inbox
FROM run;

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
          updated_at, wake_at, step_attempts, step_takeovers, takeover_step, retry_since, waiting, budget, workflow_version,
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
          updated_at, wake_at, step_attempts, step_takeovers, takeover_step, retry_since, waiting, budget, workflow_version,
          state_schema, state_seal;

-- name: lock_run
-- The run's row, locked until the transaction ends (a signal and a commit that would wait for
-- it take turns, so a signal is never left in the inbox of a run that waits for it).
SELECT run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner,
       lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at,
       wake_at, step_attempts, step_takeovers, takeover_step, retry_since, waiting, budget, workflow_version, state_schema,
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
                              tool_call_id, at, step_seq, content_artifact)
VALUES (%(tenant_id)s, %(thread_id)s,
        (SELECT COALESCE(MAX(seq), 0) + 1 FROM perdure.messages
         WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s),
        %(run_id)s, %(role)s, %(content)s, %(tool_calls)s::json, %(tool_call_id)s, %(at)s,
        %(step_seq)s, %(content_artifact)s::json);

-- name: list_messages
-- Read as tuples (rows.message_from_values unpacks the columns in this order).
SELECT seq, run_id, role, content, tool_calls, tool_call_id, at, content_artifact
FROM perdure.messages
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s AND seq > %(after)s
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
-- fence waits for this transaction instead of overtaking it. %(status)s is 'planned' (attempts
-- 0), or 'executing' (attempts 1, the attempt's %(deadline)s) for an intent folded with the
-- move that starts its first attempt.
INSERT INTO perdure.effects (effect_key, tenant_id, run_id, step, step_seq, name, target,
                             operation, request_hash, request, status, attempts, compensator,
                             created_at, updated_at, deadline)
SELECT %(key)s, %(tenant_id)s, %(run_id)s, %(step)s, %(step_seq)s, %(name)s, %(target)s,
       %(operation)s, %(request_hash)s, %(request)s::json, %(status)s, %(attempts)s,
       %(compensator)s, %(now)s, %(now)s, %(deadline)s::timestamptz
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

-- name: plan_effect
-- insert_effect and its 'effect' events as one statement, one round trip in autocommit: the
-- intent is recorded, the run's row share-locked first as insert_effect does, only while the
-- fence holds and the run is unfinished. The events: %(planned)s, then %(started)s unless it
-- is NULL (an intent recorded 'executing': its move to the first attempt), in this order. No
-- row: nothing was written, because the intent was already recorded or the guard matched
-- nothing; the transaction path (insert_effect, get_effect) then says which. A lone intent is
-- read as a tuple: rows.effect_from_values unpacks the columns in this order.
WITH planned AS (
    INSERT INTO perdure.effects (effect_key, tenant_id, run_id, step, step_seq, name, target,
                                 operation, request_hash, request, status, attempts,
                                 compensator, created_at, updated_at, deadline)
    SELECT %(key)s, %(tenant_id)s, %(run_id)s, %(step)s, %(step_seq)s, %(name)s, %(target)s,
           %(operation)s, %(request_hash)s, %(request)s::json, %(status)s, %(attempts)s,
           %(compensator)s, %(now)s, %(now)s, %(deadline)s::timestamptz
    WHERE EXISTS (SELECT 1 FROM perdure.runs
                  WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND fence = %(fence)s
                    AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
                  FOR SHARE)
    ON CONFLICT (effect_key) DO NOTHING
    RETURNING effect_key, tenant_id, run_id, step, step_seq, name, target, operation, request_hash,
          request, status, attempts, result, receipt, last_error, compensator, resolution,
          created_at, updated_at, deadline
), logged AS (
    INSERT INTO perdure.events (tenant_id, run_id, type, step, fence, data, at)
    SELECT tenant_id, run_id, 'effect', step, %(fence)s, moves.data, %(now)s
    FROM planned
    CROSS JOIN (VALUES (1, %(planned)s::json), (2, %(started)s::json)) AS moves (n, data)
    WHERE moves.data IS NOT NULL
    ORDER BY moves.n
)
SELECT effect_key, tenant_id, run_id, step, step_seq, name, target, operation, request_hash,
          request, status, attempts, result, receipt, last_error, compensator, resolution,
          created_at, updated_at, deadline
FROM planned;

-- name: move_effect
-- An effect's status change and its 'effect' event (%(change)s: its data) as one statement:
-- guarded by the status the caller saw and, with a fence (the worker's move), by the run's
-- fence and an unfinished run, whose row it share-locks first, so a run's events commit in
-- number order and a claim that would raise the fence waits for it. A person's decision
-- passes no fence and locks the run before, in the same transaction. No row: the guard
-- matched nothing and nothing was written. (SQLite, whose statements write one table each:
-- update_effect, then insert_event.) A lone move is read as a tuple: rows.effect_from_values
-- unpacks the columns in this order.
WITH moved AS (
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
          created_at, updated_at, deadline
), logged AS (
    INSERT INTO perdure.events (tenant_id, run_id, type, step, fence, data, at)
    SELECT tenant_id, run_id, 'effect', step, %(fence)s, %(change)s::json, %(now)s
    FROM moved
)
SELECT effect_key, tenant_id, run_id, step, step_seq, name, target, operation, request_hash,
          request, status, attempts, result, receipt, last_error, compensator, resolution,
          created_at, updated_at, deadline
FROM moved;

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
          updated_at, wake_at, step_attempts, step_takeovers, takeover_step, retry_since, waiting, budget, workflow_version,
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
          updated_at, wake_at, step_attempts, step_takeovers, takeover_step, retry_since, waiting, budget, workflow_version,
          state_schema, state_seal;

-- name: delete_field
DELETE FROM perdure.state_fields
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND field = %(field)s;

-- name: scan_runs
SELECT run_id, tenant_id, thread_id, workflow, status, next_step, state_version, fence, owner,
       lease_until, release, idempotency_key, result, error, steps_done, created_at, updated_at,
       wake_at, step_attempts, step_takeovers, takeover_step, retry_since, waiting, budget, workflow_version, state_schema,
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
-- (an idle LangGraph thread is RUNNING with no owner: it waits for its next invocation)
SELECT * FROM perdure.runs
WHERE status = 'RUNNING' AND updated_at < %(before)s
  AND NOT (workflow = 'langgraph' AND owner IS NULL)
  AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)
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
-- The waiting input joins the thread's messages, in the order it arrived, and is marked
-- delivered, in one statement (the caller holds the thread, so the numbers follow the thread's
-- last one, messages written earlier in the transaction included).
WITH moved AS (
    UPDATE perdure.thread_inbox SET delivered_at = %(now)s
    WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s AND delivered_at IS NULL
      AND (run_id IS NULL OR run_id = %(run_id)s::text)
    RETURNING id, tenant_id, thread_id, run_id, role, content, tool_calls, tool_call_id
)
INSERT INTO perdure.messages (tenant_id, thread_id, seq, run_id, role, content, tool_calls,
                              tool_call_id, at)
SELECT tenant_id, thread_id,
       (SELECT COALESCE(MAX(seq), 0) FROM perdure.messages
        WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s)
         + ROW_NUMBER() OVER (ORDER BY id),
       run_id, role, content, tool_calls, tool_call_id, %(now)s
FROM moved
ORDER BY id;

-- name: mark_inbox_delivered
-- Nothing to do: deliver_inbox marks what it moves.
SELECT 1;

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
-- new_attempt = attempt + 1, a flush the attempt it writes; was_finished is true only to
-- reopen a finished message.
UPDATE perdure.streams
SET attempt = %(new_attempt)s,
    last_seq = last_seq + %(count)s,
    finished = %(finish)s,
    updated_at = %(now)s
WHERE tenant_id = %(tenant_id)s AND message_id = %(message_id)s AND run_id = %(run_id)s
  AND attempt = %(attempt)s AND finished = %(was_finished)s
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

-- name: end_stalled_transactions
-- Every worker's listener ends the perdure sessions of this database whose transaction has
-- waited for its client longer than the bound (a client frozen inside it: SIGSTOP, a paused VM),
-- so the row locks it holds go: what idle_in_transaction_session_timeout does, but that timer
-- is not armed when a pipeline ends with a Flush after its Sync (as psycopg's does, and most of
-- perdure's transactions begin in one), and such a session then even shows as 'active'. So the
-- test is the wait itself: inside a transaction, reading from its client (ClientRead), since
-- longer than the bound. Server time, like the timeout.
SELECT count(pg_terminate_backend(pid)) AS ended
FROM pg_stat_activity
WHERE datname = current_database() AND application_name = %(application_name)s
  AND pid <> pg_backend_pid()
  AND backend_type = 'client backend'
  AND xact_start IS NOT NULL
  AND wait_event_type = 'Client' AND wait_event = 'ClientRead'
  AND state_change < now() - make_interval(secs => %(seconds)s);
-- Graph checkpoints (perdure.langgraph; store/engine/checkpoints.py).

-- name: listen_events
LISTEN perdure_events;

-- name: insert_history
INSERT INTO perdure.state_history (run_id, tenant_id, field, step_seq, version, value, appended)
VALUES (%(run_id)s, %(tenant_id)s, %(field)s, %(step_seq)s, %(version)s, %(value)s,
        %(appended)s::boolean);

-- name: get_savepoint
SELECT run_id, tenant_id, label, step_seq, created_by, created_at, expires_at
FROM perdure.savepoints
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND label = %(label)s;

-- name: insert_savepoint
INSERT INTO perdure.savepoints (run_id, tenant_id, label, step_seq, created_by, created_at,
                                expires_at)
VALUES (%(run_id)s, %(tenant_id)s, %(label)s, %(step_seq)s, %(by)s, %(now)s, %(expires_at)s);

-- name: insert_fork
INSERT INTO perdure.forks (run_id, tenant_id, source_run_id, step_seq, savepoint, patched,
                           created_by, created_at)
VALUES (%(run_id)s, %(tenant_id)s, %(source_run_id)s, %(step_seq)s, %(savepoint)s,
        %(patched)s::json, %(by)s, %(now)s);

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

-- name: digest_in_use
SELECT 1 AS used WHERE EXISTS (
    SELECT 1 FROM perdure.artifacts WHERE tenant_id = %(tenant_id)s AND digest = %(digest)s)
  OR EXISTS (
    SELECT 1 FROM perdure.messages
    WHERE tenant_id = %(tenant_id)s AND content_artifact IS NOT NULL
      AND content_artifact::text LIKE %(pattern)s);

-- Retention and erasure (0011, 0012) ---------------------------------------------------------

-- name: insert_erasure
INSERT INTO perdure.erasures (tenant_id, thread_id, run_id, counts, erased_by, at)
VALUES (%(tenant_id)s, %(thread_id)s, %(run_id)s, %(counts)s::json, %(by)s, %(now)s);

-- Deleting many runs at once (gc): one statement per table for a batch of runs.

-- name: child_runs
-- The children a run started (ctx.spawn), by key.
SELECT run_id, child_key, workflow, status, result, error, created_at, updated_at
FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND parent_run_id = %(parent_run_id)s
ORDER BY child_key;

-- name: run_parent
SELECT parent_run_id, child_key FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- Field logs (0014) --------------------------------------------------------------------------

-- name: insert_tail
INSERT INTO perdure.state_tails (run_id, tenant_id, field, step_seq, value)
VALUES (%(run_id)s, %(tenant_id)s, %(field)s, %(step_seq)s, %(value)s);

-- name: delete_tails
DELETE FROM perdure.state_tails
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s AND field = %(field)s;

-- name: feed_lock_timeout
SELECT set_config('lock_timeout', %(timeout)s, true);

-- name: feed_barrier
LOCK TABLE perdure.events IN SHARE MODE;

-- Memory (0018) ------------------------------------------------------------------------------

-- name: upsert_memory
-- A step's put, in its boundary's transaction: a new item at version 1, or the next version.
INSERT INTO perdure.memory (tenant_id, namespace, key, value, version, run_id, step_seq,
                            created_at, updated_at, expires_at, ttl_seconds)
VALUES (%(tenant_id)s, %(namespace)s, %(key)s, %(value)s::json, 1, %(run_id)s, %(step_seq)s,
        %(now)s, %(now)s, %(expires_at)s::timestamptz, %(ttl_seconds)s)
ON CONFLICT (tenant_id, namespace, key) DO UPDATE
SET value = excluded.value, version = perdure.memory.version + 1, run_id = excluded.run_id,
    step_seq = excluded.step_seq, updated_at = excluded.updated_at,
    expires_at = excluded.expires_at, ttl_seconds = excluded.ttl_seconds;

-- name: delete_memory
DELETE FROM perdure.memory
WHERE tenant_id = %(tenant_id)s AND namespace = %(namespace)s AND key = %(key)s;

-- name: delete_memory_vectors
-- A put replaces the item's vectors: the old ones go first.
DELETE FROM perdure.memory_vectors
WHERE tenant_id = %(tenant_id)s AND namespace = %(namespace)s AND key = %(key)s;

-- name: insert_memory_vector
INSERT INTO perdure.memory_vectors (tenant_id, namespace, key, path, dims, vector)
VALUES (%(tenant_id)s, %(namespace)s, %(key)s, %(path)s, %(dims)s, %(vector)s);
