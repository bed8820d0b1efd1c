-- Waiting safely: approvals, a signal inbox per run, budgets, and remembered client requests.

-- What a waiting run waits for (JSON: kind approval | signal | timer, and where it goes next).
ALTER TABLE runs ADD COLUMN waiting TEXT;
-- Limits, what was used, and the no-progress guard (JSON).
ALTER TABLE runs ADD COLUMN budget TEXT;

CREATE TABLE approvals (
    id           INTEGER PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    run_id       TEXT NOT NULL REFERENCES runs (run_id),
    step         TEXT NOT NULL,
    role         TEXT NOT NULL,
    request      TEXT NOT NULL,
    on_approve   TEXT NOT NULL,
    on_reject    TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
    decided_by   TEXT,
    decided_role TEXT,
    comment      TEXT,
    request_id   TEXT,
    requested_at TEXT NOT NULL,
    decided_at   TEXT
);

CREATE INDEX approvals_pending ON approvals (tenant_id, status, id);
CREATE INDEX approvals_by_run ON approvals (run_id, id);

CREATE TABLE signals (
    id          INTEGER PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    run_id      TEXT NOT NULL REFERENCES runs (run_id),
    signal_id   TEXT NOT NULL,
    name        TEXT NOT NULL,
    payload     TEXT,
    received_at TEXT NOT NULL,
    consumed_at TEXT,
    UNIQUE (tenant_id, run_id, signal_id)
);

CREATE INDEX signals_inbox ON signals (run_id, name, consumed_at, id);

CREATE TABLE requests (
    tenant_id  TEXT NOT NULL,
    request_id TEXT NOT NULL,
    operation  TEXT NOT NULL,
    result     TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, request_id)
) WITHOUT ROWID;
