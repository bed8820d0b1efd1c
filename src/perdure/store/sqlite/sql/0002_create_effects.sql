-- The effect ledger, and durable waits: a run waiting to retry holds no lease and sleeps in the
-- database until wake_at.

ALTER TABLE runs ADD COLUMN wake_at TEXT;
ALTER TABLE runs ADD COLUMN step_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN retry_since TEXT;

CREATE TABLE effects (
    id           INTEGER PRIMARY KEY,
    effect_key   TEXT NOT NULL UNIQUE,
    tenant_id    TEXT NOT NULL,
    run_id       TEXT NOT NULL REFERENCES runs (run_id),
    step         TEXT NOT NULL,
    step_seq     INTEGER NOT NULL,
    name         TEXT NOT NULL,
    target       TEXT NOT NULL,
    operation    TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    request      TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN (
                     'planned', 'executing', 'confirmed', 'rejected', 'ambiguous',
                     'compensated')),
    attempts     INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    result       TEXT,
    receipt      TEXT,
    last_error   TEXT,
    compensator  TEXT,
    resolution   TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);

CREATE INDEX effects_by_run ON effects (tenant_id, run_id, id);
CREATE INDEX effects_by_status ON effects (tenant_id, status);
