-- API keys of the HTTP server (`perdure keys`): each maps to a principal (tenant, name,
-- roles). Only a hash of the secret is stored; a revoked key stays, for the record.

CREATE TABLE perdure.api_keys (
    key_id      text PRIMARY KEY,
    tenant_id   text NOT NULL,
    name        text NOT NULL,
    roles       json NOT NULL,
    secret_hash text NOT NULL,
    created_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);

CREATE UNIQUE INDEX api_keys_live_name ON perdure.api_keys (tenant_id, name)
    WHERE revoked_at IS NULL;

-- The tenant-wide event feed reads a tenant's events in order.
CREATE INDEX events_by_tenant ON perdure.events (tenant_id, seq);

-- Event streams (SSE) wake on a notification carrying "tenant/run" when the inserting
-- transaction commits; readers then read the store (the notification is only a wake-up).
CREATE FUNCTION perdure.notify_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('perdure_events', NEW.tenant_id || '/' || NEW.run_id);
    RETURN NULL;
END
$$;

CREATE TRIGGER events_notify
AFTER INSERT ON perdure.events
FOR EACH ROW
EXECUTE FUNCTION perdure.notify_event();
