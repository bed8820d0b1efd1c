-- State history, savepoints and forks. Every value a state field takes is kept as a delta,
-- keyed by the step after which it was written (0: the initial state), so the state at any
-- step can be rebuilt; state_fields stays the current state. A NULL value records a field that
-- was removed. Messages learn the step that appended them (0: with the run's start).

CREATE TABLE perdure.state_history (
    run_id    text NOT NULL REFERENCES perdure.runs (run_id),
    tenant_id text NOT NULL,
    field     text NOT NULL,
    step_seq  integer NOT NULL CHECK (step_seq >= 0),
    version   bigint NOT NULL CHECK (version >= 0),
    value     text,
    PRIMARY KEY (run_id, field, step_seq, version)
);

CREATE INDEX state_history_by_step ON perdure.state_history (run_id, step_seq);

CREATE TABLE perdure.savepoints (
    run_id     text NOT NULL REFERENCES perdure.runs (run_id),
    tenant_id  text NOT NULL,
    label      text NOT NULL,
    step_seq   integer NOT NULL CHECK (step_seq >= 0),
    created_by text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz,
    PRIMARY KEY (run_id, label)
);

CREATE TABLE perdure.forks (
    run_id        text PRIMARY KEY REFERENCES perdure.runs (run_id),
    tenant_id     text NOT NULL,
    source_run_id text NOT NULL,
    step_seq      integer NOT NULL CHECK (step_seq >= 0),
    savepoint     text,
    patched       json,
    created_by    text NOT NULL,
    created_at    timestamptz NOT NULL
);

CREATE INDEX forks_by_source ON perdure.forks (tenant_id, source_run_id);

ALTER TABLE perdure.messages ADD COLUMN step_seq integer;
