-- The named queries of the memory wing (sqlite); see perdure.store.queries.

-- name: get_memory
SELECT namespace, key, value, version, run_id, created_at, updated_at, expires_at,
       ttl_seconds
FROM memory
WHERE tenant_id = :tenant_id AND namespace = :namespace AND key = :key
  AND (expires_at IS NULL OR expires_at > :now);

-- name: get_memories
-- The live items of :items (a JSON array of [namespace, key] pairs) that exist, in no order.
SELECT m.namespace, m.key, m.value, m.version, m.run_id, m.created_at, m.updated_at,
       m.expires_at, m.ttl_seconds
FROM (SELECT DISTINCT json_extract(value, '$[0]') AS namespace,
                      json_extract(value, '$[1]') AS key
      FROM json_each(:items)) i
JOIN memory m ON m.tenant_id = :tenant_id AND m.namespace = i.namespace AND m.key = i.key
WHERE m.expires_at IS NULL OR m.expires_at > :now;

-- name: search_memory
-- A page of the live items of a namespace and the namespaces below it, ordered by namespace
-- then key. :prefix '' is every namespace of the tenant; otherwise :before is :prefix followed
-- by '0' (the first character after '/'), so the index reads only the prefix's range (for '',
-- NULL: the tenant's last namespace bounds it). Only items after (:after_namespace, :after_key)
-- (a keyset; '' and '' for the first) whose value is an object meeting every condition of
-- :conditions (NULL: none), skipping :skip of them and returning at most :take.
-- :conditions is a JSON array of {"p": path, "o": op, "k": kind, "w": want} built by
-- perdure.store.wings.memory.conditions: the field at path p ('$."name"') compared by op (eq,
-- ne, gt, gte, lt, lte) with want, of kind number (an integer), text, true, false or null.
-- SQLite decides every condition on every value (undecided is PostgreSQL's; always 0 here).
SELECT namespace, key, value, version, run_id, created_at, updated_at, expires_at,
       ttl_seconds, 0 AS undecided, 0 AS undecided_through
FROM memory m
WHERE tenant_id = :tenant_id
  AND namespace >= :prefix
  AND namespace < coalesce(:before, (SELECT max(namespace) || '0' FROM memory
                                     WHERE tenant_id = :tenant_id))
  AND (:prefix = '' OR namespace = :prefix
       OR substr(namespace, 1, length(:prefix) + 1) = :prefix || '/')
  AND (namespace, key) > (:after_namespace, :after_key)
  AND (expires_at IS NULL OR expires_at > :now)
  AND (:conditions IS NULL OR (json_type(m.value) = 'object' AND NOT EXISTS (
        SELECT 1
        FROM (SELECT json_extract(c.value, '$.o') AS o, json_extract(c.value, '$.k') AS k,
                     json_extract(c.value, '$.w') AS w,
                     json_type(m.value, json_extract(c.value, '$.p')) AS t,
                     json_extract(m.value, json_extract(c.value, '$.p')) AS a
              FROM json_each(:conditions) c) f
        WHERE NOT coalesce(CASE
          WHEN f.o = 'ne' THEN f.t IS NULL OR NOT coalesce(CASE f.k
            WHEN 'number' THEN f.t IN ('integer', 'real') AND f.a = f.w
            WHEN 'text' THEN f.t = 'text' AND f.a = f.w
            ELSE f.t = f.k END, 0)
          WHEN f.o = 'eq' THEN CASE f.k
            WHEN 'number' THEN f.t IN ('integer', 'real') AND f.a = f.w
            WHEN 'text' THEN f.t = 'text' AND f.a = f.w
            ELSE f.t = f.k END
          WHEN f.t NOT IN ('integer', 'real') THEN 0
          WHEN f.o = 'gt' THEN CAST(f.a AS REAL) > CAST(f.w AS REAL)
          WHEN f.o = 'gte' THEN CAST(f.a AS REAL) >= CAST(f.w AS REAL)
          WHEN f.o = 'lt' THEN CAST(f.a AS REAL) < CAST(f.w AS REAL)
          WHEN f.o = 'lte' THEN CAST(f.a AS REAL) <= CAST(f.w AS REAL)
        END, 0))))
ORDER BY namespace, key
LIMIT :take OFFSET :skip;

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
