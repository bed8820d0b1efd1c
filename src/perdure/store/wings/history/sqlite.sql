-- The named queries of the history wing (sqlite); see perdure.store.queries.

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

-- name: list_savepoints
SELECT * FROM savepoints WHERE tenant_id = :tenant_id AND run_id = :run_id
ORDER BY step_seq, created_at;

-- name: get_fork
SELECT * FROM forks WHERE tenant_id = :tenant_id AND run_id = :run_id;

-- name: run_message_bounds
SELECT MAX(CASE WHEN COALESCE(step_seq, 0) <= :step_seq THEN seq END) AS kept,
       MIN(seq) AS first
FROM messages
WHERE tenant_id = :tenant_id AND thread_id = :thread_id AND run_id = :run_id;

-- Artifacts (0012) ---------------------------------------------------------------------------
