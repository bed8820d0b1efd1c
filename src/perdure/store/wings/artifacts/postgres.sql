-- The named queries of the artifacts wing (postgres); see perdure.store.queries.

-- name: list_artifacts
SELECT id, tenant_id, run_id, step, step_seq, fence, digest, size, media_type, parents,
       status, created_at, committed_at
FROM perdure.artifacts
WHERE tenant_id = %(tenant_id)s
  AND (%(run_id)s::text IS NULL OR run_id = %(run_id)s)
  AND (%(digest)s::text IS NULL OR digest = %(digest)s)
ORDER BY id;

-- name: orphan_uploads
SELECT a.id, a.tenant_id, a.run_id, a.step, a.step_seq, a.fence, a.digest, a.size,
       a.media_type, a.parents, a.status, a.created_at, a.committed_at
FROM perdure.artifacts a JOIN perdure.runs r ON r.run_id = a.run_id
WHERE a.status = 'uploaded'
  AND (r.fence <> a.fence OR r.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
ORDER BY a.id
LIMIT %(limit)s;

-- name: delete_artifact
DELETE FROM perdure.artifacts WHERE id = %(id)s RETURNING tenant_id, digest;
