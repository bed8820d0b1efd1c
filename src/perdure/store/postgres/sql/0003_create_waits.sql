-- Waiting safely: approvals, a signal inbox per run, budgets, and remembered client requests.

-- What a waiting run waits for (JSON: kind approval | signal | timer, and where it goes next).
ALTER TABLE perdure.runs ADD COLUMN waiting json;
-- Limits, what was used, and the no-progress guard (JSON).
ALTER TABLE perdure.runs ADD COLUMN budget json;

CREATE TABLE perdure.approvals (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id    text NOT NULL,
    run_id       text NOT NULL REFERENCES perdure.runs (run_id),
    step         text NOT NULL,
    role         text NOT NULL,
    request      json NOT NULL,
    on_approve   text NOT NULL,
    on_reject    text NOT NULL,
    status       text NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
    decided_by   text,
    decided_role text,
    comment      text,
    request_id   text,
    requested_at timestamptz NOT NULL,
    decided_at   timestamptz
);

CREATE INDEX approvals_pending ON perdure.approvals (tenant_id, status, id);
CREATE INDEX approvals_by_run ON perdure.approvals (run_id, id);

CREATE TABLE perdure.signals (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id   text NOT NULL,
    run_id      text NOT NULL REFERENCES perdure.runs (run_id),
    signal_id   text NOT NULL,
    name        text NOT NULL,
    payload     json,
    received_at timestamptz NOT NULL,
    consumed_at timestamptz,
    UNIQUE (tenant_id, run_id, signal_id)
);

CREATE INDEX signals_inbox ON perdure.signals (run_id, name, consumed_at, id);

CREATE TABLE perdure.requests (
    tenant_id  text NOT NULL,
    request_id text NOT NULL,
    operation  text NOT NULL,
    result     json,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, request_id)
);
