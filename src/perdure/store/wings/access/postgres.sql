-- The named queries of the access wing (postgres); see perdure.store.queries.

-- name: insert_key
INSERT INTO perdure.api_keys (key_id, tenant_id, name, roles, secret_hash, created_at)
VALUES (%(key_id)s, %(tenant_id)s, %(name)s, %(roles)s, %(secret_hash)s, %(now)s);

-- name: live_key_by_name
SELECT key_id FROM perdure.api_keys
WHERE tenant_id = %(tenant_id)s AND name = %(name)s AND revoked_at IS NULL;

-- name: get_key
SELECT key_id, tenant_id, name, roles, secret_hash, created_at, revoked_at
FROM perdure.api_keys WHERE key_id = %(key_id)s;

-- name: list_keys
SELECT key_id, tenant_id, name, roles, secret_hash, created_at, revoked_at
FROM perdure.api_keys
WHERE tenant_id = %(tenant_id)s AND (%(revoked)s OR revoked_at IS NULL)
ORDER BY created_at, key_id;

-- name: revoke_key
UPDATE perdure.api_keys SET revoked_at = COALESCE(revoked_at, %(now)s)
WHERE tenant_id = %(tenant_id)s AND key_id = %(key_id)s;

-- name: end_key_sessions
UPDATE perdure.sessions SET ended_at = %(now)s, ended_why = 'revoked'
WHERE tenant_id = %(tenant_id)s AND key_id = %(key_id)s AND ended_at IS NULL;

-- name: insert_session
INSERT INTO perdure.sessions (session_id, tenant_id, key_id, secret_hash, created_at, seen_at,
                              expires_at, idle_seconds)
VALUES (%(session_id)s, %(tenant_id)s, %(key_id)s, %(secret_hash)s, %(created_at)s,
        %(created_at)s, %(expires_at)s, %(idle_seconds)s);

-- name: get_session
SELECT session_id, tenant_id, key_id, secret_hash, created_at, seen_at, expires_at,
       idle_seconds, ended_at, ended_why
FROM perdure.sessions WHERE session_id = %(session_id)s;

-- name: touch_session
UPDATE perdure.sessions SET seen_at = %(now)s
WHERE session_id = %(session_id)s AND ended_at IS NULL AND seen_at < %(now)s;

-- name: end_session
UPDATE perdure.sessions
SET ended_at = COALESCE(ended_at, %(now)s), ended_why = COALESCE(ended_why, %(why)s)
WHERE tenant_id = %(tenant_id)s AND session_id = %(session_id)s;

-- name: list_sessions
SELECT session_id, tenant_id, key_id, secret_hash, created_at, seen_at, expires_at,
       idle_seconds, ended_at, ended_why
FROM perdure.sessions
WHERE tenant_id = %(tenant_id)s AND (%(key_id)s::text IS NULL OR key_id = %(key_id)s)
  AND (%(ended)s OR ended_at IS NULL)
ORDER BY created_at, session_id;
