-- API keys of the HTTP server (`perdure keys`): each maps to a principal (tenant, name,
-- roles). Only a hash of the secret is stored; a revoked key stays, for the record.

CREATE TABLE api_keys (
    key_id      TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    name        TEXT NOT NULL,
    roles       TEXT NOT NULL,
    secret_hash TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
) WITHOUT ROWID;

CREATE UNIQUE INDEX api_keys_live_name ON api_keys (tenant_id, name) WHERE revoked_at IS NULL;

-- The tenant-wide event feed reads a tenant's events in order.
CREATE INDEX events_by_tenant ON events (tenant_id, seq);
