-- Sessions of the dashboard (`perdure serve`): logging in with an API key makes one, and the
-- browser's cookie carries pds_<session_id>_<secret>, never the key. Only a hash of the secret
-- is stored. A session is over at expires_at, after idle_seconds without a request (seen_at),
-- at logout, or when its key is revoked (ended_at, ended_why); an ended session stays, for the
-- record: the audit trail names the session a decision came through.

CREATE TABLE perdure.sessions (
    session_id   text PRIMARY KEY,
    tenant_id    text NOT NULL,
    key_id       text NOT NULL REFERENCES perdure.api_keys (key_id),
    secret_hash  text NOT NULL,
    created_at   timestamptz NOT NULL,
    seen_at      timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    idle_seconds integer NOT NULL CHECK (idle_seconds > 0),
    ended_at     timestamptz,
    ended_why    text,
    CHECK ((ended_at IS NULL) = (ended_why IS NULL))
);

-- Revoking a key ends its open sessions.
CREATE INDEX sessions_open_by_key ON perdure.sessions (key_id) WHERE ended_at IS NULL;
-- An operator lists a tenant's sessions, newest last.
CREATE INDEX sessions_by_tenant ON perdure.sessions (tenant_id, created_at);
