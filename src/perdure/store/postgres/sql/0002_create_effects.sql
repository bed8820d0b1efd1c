-- The effect ledger, and durable waits: a run waiting to retry holds no lease and sleeps in the
-- database until wake_at.

ALTER TABLE perdure.runs ADD COLUMN wake_at timestamptz;
ALTER TABLE perdure.runs ADD COLUMN step_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE perdure.runs ADD COLUMN retry_since timestamptz;

CREATE TABLE perdure.effects (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    effect_key   text NOT NULL UNIQUE,
    tenant_id    text NOT NULL,
    run_id       text NOT NULL REFERENCES perdure.runs (run_id),
    step         text NOT NULL,
    step_seq     integer NOT NULL,
    name         text NOT NULL,
    target       text NOT NULL,
    operation    text NOT NULL,
    request_hash text NOT NULL,
    request      json NOT NULL,
    status       text NOT NULL CHECK (status IN (
                     'planned', 'executing', 'confirmed', 'rejected', 'ambiguous',
                     'compensated')),
    attempts     integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    result       json,
    receipt      text,
    last_error   json,
    compensator  text,
    resolution   json,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

CREATE INDEX effects_by_run ON perdure.effects (tenant_id, run_id, id);
CREATE INDEX effects_by_status ON perdure.effects (tenant_id, status);
