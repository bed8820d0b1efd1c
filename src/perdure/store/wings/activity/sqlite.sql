-- The named queries of the activity wing (sqlite); see perdure.store.queries.

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
