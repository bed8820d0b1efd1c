-- Sessions of the dashboard (`perdure serve`): logging in with an API key makes one, and the
-- browser's cookie carries pds_<session_id>_<secret>, never the key. Only a hash of the secret
-- is stored. A session is over at expires_at, after idle_seconds without a request (seen_at),
-- at logout, or when its key is revoked (ended_at, ended_why); an ended session stays, for the
-- record: the audit trail names the session a decision came through.

CREATE TABLE sessions (
    session_id   TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    key_id       TEXT NOT NULL REFERENCES api_keys (key_id),
    secret_hash  TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    seen_at      TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    idle_seconds INTEGER NOT NULL CHECK (idle_seconds > 0),
    ended_at     TEXT,
    ended_why    TEXT,
    CHECK ((ended_at IS NULL) = (ended_why IS NULL))
) WITHOUT ROWID;

-- Revoking a key ends its open sessions.
CREATE INDEX sessions_open_by_key ON sessions (key_id) WHERE ended_at IS NULL;
-- An operator lists a tenant's sessions, newest last.
CREATE INDEX sessions_by_tenant ON sessions (tenant_id, created_at);
