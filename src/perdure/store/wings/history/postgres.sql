-- The named queries of the history wing (postgres); see perdure.store.queries.

-- name: state_changes
SELECT step_seq, version, field, octet_length(value) AS size,
       COALESCE(strpos(value, '"__perdure_artifact__"') > 0, false) AS offloaded, appended
FROM perdure.state_history
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY step_seq, version, field;

-- name: state_at
-- For each field, its latest whole value at or before the step, then the tails appended to it
-- up to the step, in order (the primary key serves both parts); the engine joins them.
SELECT h.field, h.value, h.appended FROM perdure.state_history h
WHERE h.tenant_id = %(tenant_id)s AND h.run_id = %(run_id)s AND h.step_seq <= %(step_seq)s
  AND NOT EXISTS (
      SELECT 1 FROM perdure.state_history l
      WHERE l.run_id = h.run_id AND l.field = h.field AND l.step_seq <= %(step_seq)s
        AND NOT l.appended
        AND (l.step_seq > h.step_seq OR (l.step_seq = h.step_seq AND l.version > h.version)))
ORDER BY h.field, h.step_seq, h.version;

-- name: list_savepoints
SELECT run_id, tenant_id, label, step_seq, created_by, created_at, expires_at
FROM perdure.savepoints
WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s
ORDER BY step_seq, created_at;

-- name: get_fork
SELECT run_id, tenant_id, source_run_id, step_seq, savepoint, patched, created_by, created_at
FROM perdure.forks WHERE tenant_id = %(tenant_id)s AND run_id = %(run_id)s;

-- name: run_message_bounds
SELECT MAX(CASE WHEN COALESCE(step_seq, 0) <= %(step_seq)s THEN seq END) AS kept,
       MIN(seq) AS first
FROM perdure.messages
WHERE tenant_id = %(tenant_id)s AND thread_id = %(thread_id)s AND run_id = %(run_id)s;

-- Artifacts (0012) ---------------------------------------------------------------------------
