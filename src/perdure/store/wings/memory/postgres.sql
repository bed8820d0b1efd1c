-- The named queries of the memory wing (postgres); see perdure.store.queries.

-- name: get_memory
SELECT namespace, key, value, version, run_id, created_at, updated_at, expires_at,
       ttl_seconds
FROM perdure.memory
WHERE tenant_id = %(tenant_id)s AND namespace = %(namespace)s AND key = %(key)s
  AND (expires_at IS NULL OR expires_at > %(now)s);

-- name: get_memories
-- The live items of items (a JSON array of [namespace, key] pairs) that exist, in no order.
SELECT m.namespace, m.key, m.value, m.version, m.run_id, m.created_at, m.updated_at,
       m.expires_at, m.ttl_seconds
FROM (SELECT DISTINCT i ->> 0 AS namespace, i ->> 1 AS key
      FROM json_array_elements(%(items)s::json) i) i
JOIN perdure.memory m ON m.tenant_id = %(tenant_id)s AND m.namespace = i.namespace
                     AND m.key = i.key
WHERE m.expires_at IS NULL OR m.expires_at > %(now)s;

-- name: search_memory
-- A page of the live items of a namespace and the namespaces below it, ordered by namespace
-- then key; the parameters as in the SQLite query (prefix, before, after_namespace, after_key,
-- conditions, skip, take).
-- conditions is a JSON array of {"n": name, "o": op, "k": kind, "w": want} built by
-- perdure.store.wings.memory.conditions (see the SQLite query). A text is compared as its JSON
-- text (the item's and the condition's written by the same encoder), never decoded. A number
-- is cast only once its type is known (a CASE, never an AND, whose order is not kept: the
-- cast of a text would fail). PostgreSQL's JSON functions refuse a value holding \u0000
-- anywhere, so such an item is kept, undecided, for the caller to check (undecided_through
-- counts the undecided items up to this one, the skipped ones included).
SELECT namespace, key, value, version, run_id, created_at, updated_at, expires_at,
       ttl_seconds, undecided,
       sum(undecided::int) OVER (ORDER BY namespace, key ROWS UNBOUNDED PRECEDING)
         AS undecided_through
FROM (SELECT namespace, key, value, version, run_id, created_at, updated_at, expires_at,
             ttl_seconds,
             %(conditions)s::json IS NOT NULL AND strpos(value::text, '\u0000') > 0
               AS undecided
      FROM perdure.memory m
      WHERE tenant_id = %(tenant_id)s
        AND namespace >= %(prefix)s::text
        AND namespace < coalesce(%(before)s::text,
                                 (SELECT max(namespace) || '0' FROM perdure.memory
                                  WHERE tenant_id = %(tenant_id)s))
        AND (%(prefix)s::text = '' OR namespace = %(prefix)s::text
             OR substr(namespace, 1, length(%(prefix)s::text) + 1) = %(prefix)s::text || '/')
        AND (namespace, key) > (%(after_namespace)s::text, %(after_key)s::text)
        AND (expires_at IS NULL OR expires_at > %(now)s)
        AND CASE
          WHEN %(conditions)s::json IS NULL THEN true
          WHEN strpos(m.value::text, '\u0000') > 0 THEN true
          ELSE json_typeof(m.value) = 'object' AND NOT EXISTS (
            SELECT 1
            FROM (SELECT c ->> 'o' AS o, c ->> 'k' AS k, (c -> 'w')::text AS w,
                         json_typeof(m.value -> (c ->> 'n')) AS t,
                         (m.value -> (c ->> 'n'))::text AS a
                  FROM json_array_elements(%(conditions)s::json) c) f
            WHERE NOT coalesce(CASE
              WHEN f.o = 'ne' THEN f.t IS NULL OR NOT coalesce(CASE f.k
                WHEN 'number' THEN CASE WHEN f.t = 'number' THEN f.a::float8 = f.w::float8 END
                WHEN 'text' THEN f.t = 'string' AND f.a = f.w
                WHEN 'null' THEN f.t = 'null'
                ELSE f.t = 'boolean' AND f.a = f.k END, false)
              WHEN f.o = 'eq' THEN CASE f.k
                WHEN 'number' THEN CASE WHEN f.t = 'number' THEN f.a::float8 = f.w::float8 END
                WHEN 'text' THEN f.t = 'string' AND f.a = f.w
                WHEN 'null' THEN f.t = 'null'
                ELSE f.t = 'boolean' AND f.a = f.k END
              WHEN f.t IS DISTINCT FROM 'number' THEN false
              WHEN f.o = 'gt' THEN f.a::float8 > f.w::float8
              WHEN f.o = 'gte' THEN f.a::float8 >= f.w::float8
              WHEN f.o = 'lt' THEN f.a::float8 < f.w::float8
              WHEN f.o = 'lte' THEN f.a::float8 <= f.w::float8
            END, false))
        END) s
ORDER BY namespace, key
LIMIT %(take)s OFFSET %(skip)s;

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
