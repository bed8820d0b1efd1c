-- Runs, their state fields, committed steps, events and thread messages.
-- Times are ISO-8601 UTC text with microseconds, so they compare correctly as text.
-- Events and messages are never deleted while their run exists, so their integer keys only grow
-- (no AUTOINCREMENT: it would cost a second page write on every step).

CREATE TABLE runs (
    run_id          TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL,
    thread_id       TEXT NOT NULL,
    workflow        TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN (
                        'PENDING', 'RUNNING', 'WAITING_APPROVAL', 'WAITING_EXTERNAL',
                        'NEEDS_ATTENTION', 'QUARANTINED', 'CANCEL_REQUESTED',
                        'SUCCEEDED', 'FAILED', 'CANCELLED')),
    next_step       TEXT,
    state_version   INTEGER NOT NULL DEFAULT 0 CHECK (state_version >= 0),
    fence           INTEGER NOT NULL DEFAULT 0 CHECK (fence >= 0),
    owner           TEXT,
    lease_until     TEXT,
    release         TEXT NOT NULL,
    idempotency_key TEXT,
    result          TEXT,
    error           TEXT,
    steps_done      INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    UNIQUE (tenant_id, idempotency_key)
);

CREATE INDEX runs_runnable ON runs (status, lease_until);
CREATE INDEX runs_by_tenant ON runs (tenant_id, created_at);
CREATE INDEX runs_by_thread ON runs (tenant_id, thread_id, created_at);

CREATE TABLE state_fields (
    run_id    TEXT NOT NULL REFERENCES runs (run_id),
    tenant_id TEXT NOT NULL,
    field     TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (run_id, field)
) WITHOUT ROWID;

CREATE TABLE steps (
    run_id      TEXT NOT NULL REFERENCES runs (run_id),
    seq         INTEGER NOT NULL,
    tenant_id   TEXT NOT NULL,
    name        TEXT NOT NULL,
    fence       INTEGER NOT NULL,
    outcome     TEXT NOT NULL,
    next_step   TEXT,
    started_at  TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE events (
    seq       INTEGER PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    run_id    TEXT NOT NULL REFERENCES runs (run_id),
    type      TEXT NOT NULL,
    step      TEXT,
    fence     INTEGER,
    data      TEXT,
    at        TEXT NOT NULL
);

CREATE INDEX events_by_run ON events (run_id, seq);

CREATE TABLE messages (
    id           INTEGER PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    thread_id    TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    run_id       TEXT REFERENCES runs (run_id),
    role         TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content      TEXT NOT NULL,
    tool_calls   TEXT,
    tool_call_id TEXT,
    at           TEXT NOT NULL,
    UNIQUE (tenant_id, thread_id, seq)
);

-- Terminal states are final: the database itself refuses any change to a finished run.
CREATE TRIGGER runs_terminal_is_final
BEFORE UPDATE ON runs
WHEN OLD.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
BEGIN
    SELECT RAISE(ABORT, 'run_closed');
END;
