-- The named queries of the memory wing (sqlite); see perdure.store.queries.

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
