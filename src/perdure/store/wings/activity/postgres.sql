-- The named queries of the activity wing (postgres); see perdure.store.queries.

-- name: tenant_events
SELECT e.run_id, e.seq, e.type, e.step, e.fence, e.data, e.at
FROM perdure.events e JOIN perdure.runs r ON r.run_id = e.run_id
WHERE e.tenant_id = %(tenant_id)s AND e.seq > %(after)s
  AND (%(any_type)s OR e.type = ANY (%(types)s::text[]))
  AND (%(workflow)s::text IS NULL OR r.workflow = %(workflow)s)
ORDER BY e.seq
LIMIT %(limit)s;

-- name: events_since
SELECT seq, tenant_id, run_id FROM perdure.events WHERE seq > %(after)s ORDER BY seq
LIMIT %(limit)s;

-- name: last_event_seq
SELECT COALESCE(MAX(seq), 0) AS seq FROM perdure.events;

-- name: run_counts
SELECT tenant_id, workflow, status, COUNT(*) AS n FROM perdure.runs
WHERE (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)
GROUP BY tenant_id, workflow, status
ORDER BY tenant_id, workflow, status;

-- name: runs_by_period
-- Runs of a tenant created since :since, by the UTC hour (width 13) or day (width 10) they were
-- created in and their status now; read through runs_by_tenant.
SELECT left(to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24'), %(width)s) AS period,
       status, COUNT(*) AS n
FROM perdure.runs
WHERE tenant_id = %(tenant_id)s AND created_at >= %(since)s
GROUP BY period, status
ORDER BY period, status;

-- name: step_timings
-- The committed steps of a tenant's runs created since :since (runs_by_tenant, then each run's
-- steps by their key), newest runs first, at most :limit.
SELECT r.workflow, s.name, s.started_at, s.finished_at
FROM perdure.runs AS r JOIN perdure.steps AS s ON s.run_id = r.run_id
WHERE r.tenant_id = %(tenant_id)s AND r.created_at >= %(since)s
ORDER BY r.created_at DESC, s.seq
LIMIT %(limit)s;

-- name: effect_counts
SELECT tenant_id, status, COUNT(*) AS n FROM perdure.effects
WHERE (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)
GROUP BY tenant_id, status
ORDER BY tenant_id, status;

-- name: runnable_summary
SELECT COUNT(*) AS n, MIN(COALESCE(wake_at, created_at)) AS oldest FROM perdure.runs
WHERE (status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED')
       OR (status = 'WAITING_EXTERNAL' AND wake_at IS NOT NULL))
  AND (lease_until IS NULL OR lease_until < %(now)s)
  AND (wake_at IS NULL OR wake_at <= %(now)s);

-- name: spend_counts
SELECT tenant_id, workflow,
       COALESCE(SUM((budget -> 'used' ->> 'tokens')::bigint), 0) AS tokens,
       COALESCE(SUM((budget -> 'used' ->> 'cost')::float8), 0.0) AS cost
FROM perdure.runs
WHERE budget IS NOT NULL AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)
GROUP BY tenant_id, workflow
ORDER BY tenant_id, workflow;
-- History, savepoints, forks (0011) ---------------------------------------------------------
