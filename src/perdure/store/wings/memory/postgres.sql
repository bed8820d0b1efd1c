-- The named queries of the memory wing (postgres); see perdure.store.queries.

-- name: get_memory
SELECT namespace, key, value, version, run_id, created_at, updated_at, expires_at,
       ttl_seconds
FROM perdure.memory
WHERE tenant_id = %(tenant_id)s AND namespace = %(namespace)s AND key = %(key)s
  AND (expires_at IS NULL OR expires_at > %(now)s);

-- name: search_memory
-- Every live item of a namespace and the namespaces below it ('' : all of the tenant's).
SELECT namespace, key, value, version, run_id, created_at, updated_at, expires_at,
       ttl_seconds
FROM perdure.memory
WHERE tenant_id = %(tenant_id)s
  AND (%(prefix)s::text = '' OR namespace = %(prefix)s::text
       OR substr(namespace, 1, length(%(prefix)s::text) + 1) = %(prefix)s::text || '/')
  AND (expires_at IS NULL OR expires_at > %(now)s)
ORDER BY namespace, key;

-- name: erase_memory
DELETE FROM perdure.memory
WHERE tenant_id = %(tenant_id)s
  AND (%(prefix)s::text = '' OR namespace = %(prefix)s::text
       OR substr(namespace, 1, length(%(prefix)s::text) + 1) = %(prefix)s::text || '/');

-- name: expire_memory
DELETE FROM perdure.memory
WHERE (tenant_id, namespace, key) IN (SELECT tenant_id, namespace, key FROM perdure.memory
                                      WHERE expires_at IS NOT NULL AND expires_at <= %(now)s
                                      LIMIT %(limit)s);

-- Memory vectors (0023) ----------------------------------------------------------------------

-- name: search_memory_vectors
-- Every live item of a namespace and the namespaces below it (as search_memory), once per
-- vector it has (vector NULL for an item without one), ordered by namespace then key.
SELECT m.namespace, m.key, m.value, m.version, m.run_id, m.created_at, m.updated_at,
       m.expires_at, m.ttl_seconds, v.vector
FROM perdure.memory m
LEFT JOIN perdure.memory_vectors v ON v.tenant_id = m.tenant_id AND v.namespace = m.namespace AND v.key = m.key
WHERE m.tenant_id = %(tenant_id)s
  AND (%(prefix)s::text = '' OR m.namespace = %(prefix)s::text
       OR substr(m.namespace, 1, length(%(prefix)s::text) + 1) = %(prefix)s::text || '/')
  AND (m.expires_at IS NULL OR m.expires_at > %(now)s)
ORDER BY m.namespace, m.key;

-- name: memory_namespaces
-- The namespaces holding at least one live item of the tenant, in order.
SELECT DISTINCT namespace
FROM perdure.memory
WHERE tenant_id = %(tenant_id)s AND (expires_at IS NULL OR expires_at > %(now)s)
ORDER BY namespace;

-- name: refresh_memory_expiry
-- A read that refreshes an item's time to live (an item put without one keeps no expiry).
UPDATE perdure.memory SET expires_at = %(expires_at)s::timestamptz
WHERE tenant_id = %(tenant_id)s AND namespace = %(namespace)s AND key = %(key)s
  AND ttl_seconds IS NOT NULL AND expires_at > %(now)s;
