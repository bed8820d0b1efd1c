-- The named queries of the access wing (sqlite); see perdure.store.queries.

-- name: insert_key
INSERT INTO api_keys (key_id, tenant_id, name, roles, secret_hash, created_at)
VALUES (:key_id, :tenant_id, :name, :roles, :secret_hash, :now);

-- name: live_key_by_name
SELECT key_id FROM api_keys WHERE tenant_id = :tenant_id AND name = :name AND revoked_at IS NULL;

-- name: get_key
SELECT * FROM api_keys WHERE key_id = :key_id;

-- name: list_keys
SELECT * FROM api_keys
WHERE tenant_id = :tenant_id AND (:revoked OR revoked_at IS NULL)
ORDER BY created_at, key_id;

-- name: revoke_key
UPDATE api_keys SET revoked_at = COALESCE(revoked_at, :now)
WHERE tenant_id = :tenant_id AND key_id = :key_id;

-- name: end_key_sessions
UPDATE sessions SET ended_at = :now, ended_why = 'revoked'
WHERE tenant_id = :tenant_id AND key_id = :key_id AND ended_at IS NULL;

-- name: insert_session
INSERT INTO sessions (session_id, tenant_id, key_id, secret_hash, created_at, seen_at,
                      expires_at, idle_seconds)
VALUES (:session_id, :tenant_id, :key_id, :secret_hash, :created_at, :created_at,
        :expires_at, :idle_seconds);

-- name: get_session
SELECT * FROM sessions WHERE session_id = :session_id;

-- name: touch_session
UPDATE sessions SET seen_at = :now
WHERE session_id = :session_id AND ended_at IS NULL AND seen_at < :now;

-- name: end_session
UPDATE sessions SET ended_at = COALESCE(ended_at, :now), ended_why = COALESCE(ended_why, :why)
WHERE tenant_id = :tenant_id AND session_id = :session_id;

-- name: list_sessions
SELECT * FROM sessions
WHERE tenant_id = :tenant_id AND (:key_id IS NULL OR key_id = :key_id)
  AND (:ended OR ended_at IS NULL)
ORDER BY created_at, session_id;
