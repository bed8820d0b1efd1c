-- The named queries of the artifacts wing (sqlite); see perdure.store.queries.

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
