-- Long-term memory: one row per item a step wrote under (tenant, namespace, key), in the same
-- transaction as the step's boundary. namespace is the item's namespace parts joined by '/'
-- (no part holds '/'); value is JSON; version starts at 1 and grows by one with each
-- committed write; run_id and step_seq name the step that wrote it last. An item whose
-- expires_at has passed reads as absent until gc deletes it. Text columns compare bytewise
-- (COLLATE "C"), so a namespace prefix reads in the same order as on SQLite.

CREATE TABLE perdure.memory (
    tenant_id   text NOT NULL,
    namespace   text COLLATE "C" NOT NULL,
    key         text COLLATE "C" NOT NULL,
    value       json NOT NULL,
    version     bigint NOT NULL CHECK (version >= 1),
    run_id      text,
    step_seq    integer,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    expires_at  timestamptz,
    PRIMARY KEY (tenant_id, namespace, key)
);

CREATE INDEX memory_by_expiry ON perdure.memory (expires_at) WHERE expires_at IS NOT NULL;
