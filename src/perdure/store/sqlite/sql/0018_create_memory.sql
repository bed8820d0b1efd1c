-- Long-term memory: one row per item a step wrote under (tenant, namespace, key), in the same
-- transaction as the step's boundary. namespace is the item's namespace parts joined by '/'
-- (no part holds '/'); value is JSON text; version starts at 1 and grows by one with each
-- committed write; run_id and step_seq name the step that wrote it last. An item whose
-- expires_at has passed reads as absent until gc deletes it.

CREATE TABLE memory (
    tenant_id   TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    version     INTEGER NOT NULL CHECK (version >= 1),
    run_id      TEXT,
    step_seq    INTEGER,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    expires_at  TEXT,
    PRIMARY KEY (tenant_id, namespace, key)
);

CREATE INDEX memory_by_expiry ON memory (expires_at) WHERE expires_at IS NOT NULL;
