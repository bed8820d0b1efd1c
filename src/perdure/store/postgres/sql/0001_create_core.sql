-- Runs, their state fields, committed steps, events and thread messages, in schema perdure
-- (the store creates the schema, and perdure.perdure_migrations, before applying this file).
-- Times are timestamptz. JSON columns are json, which keeps the exact text perdure wrote (key
-- order included), so values read back the same as on SQLite; cast to jsonb to index or query.
-- State field values are text: canonical JSON that must round-trip byte for byte.

CREATE TABLE perdure.runs (
    run_id          text PRIMARY KEY,
    tenant_id       text NOT NULL,
    thread_id       text NOT NULL,
    workflow        text NOT NULL,
    status          text NOT NULL CHECK (status IN (
                        'PENDING', 'RUNNING', 'WAITING_APPROVAL', 'WAITING_EXTERNAL',
                        'NEEDS_ATTENTION', 'QUARANTINED', 'CANCEL_REQUESTED',
                        'SUCCEEDED', 'FAILED', 'CANCELLED')),
    next_step       text,
    state_version   bigint NOT NULL DEFAULT 0 CHECK (state_version >= 0),
    fence           bigint NOT NULL DEFAULT 0 CHECK (fence >= 0),
    owner           text,
    lease_until     timestamptz,
    release         json NOT NULL,
    idempotency_key text,
    result          json,
    error           json,
    steps_done      integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    UNIQUE (tenant_id, idempotency_key)
);

CREATE INDEX runs_runnable ON perdure.runs (status, lease_until);
CREATE INDEX runs_by_tenant ON perdure.runs (tenant_id, created_at);
CREATE INDEX runs_by_thread ON perdure.runs (tenant_id, thread_id, created_at);

CREATE TABLE perdure.state_fields (
    run_id    text NOT NULL REFERENCES perdure.runs (run_id),
    tenant_id text NOT NULL,
    field     text NOT NULL,
    value     text NOT NULL,
    PRIMARY KEY (run_id, field)
);

CREATE TABLE perdure.steps (
    run_id      text NOT NULL REFERENCES perdure.runs (run_id),
    seq         integer NOT NULL,
    tenant_id   text NOT NULL,
    name        text NOT NULL,
    fence       bigint NOT NULL,
    outcome     text NOT NULL,
    next_step   text,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE perdure.events (
    seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id text NOT NULL,
    run_id    text NOT NULL REFERENCES perdure.runs (run_id),
    type      text NOT NULL,
    step      text,
    fence     bigint,
    data      json,
    at        timestamptz NOT NULL
);

CREATE INDEX events_by_run ON perdure.events (run_id, seq);

CREATE TABLE perdure.messages (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id    text NOT NULL,
    thread_id    text NOT NULL,
    seq          integer NOT NULL,
    run_id       text REFERENCES perdure.runs (run_id),
    role         text NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content      text NOT NULL,
    tool_calls   json,
    tool_call_id text,
    at           timestamptz NOT NULL,
    UNIQUE (tenant_id, thread_id, seq)
);

-- Terminal states are final: the database itself refuses any change to a finished run. The
-- error carries SQLSTATE RT001 and the trigger's name, which the store turns into run_closed.
CREATE FUNCTION perdure.refuse_change_to_finished_run() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'run % is % and cannot change', OLD.run_id, OLD.status
        USING ERRCODE = 'RT001', CONSTRAINT = 'runs_terminal_is_final';
END;
$$;

CREATE TRIGGER runs_terminal_is_final
BEFORE UPDATE ON perdure.runs
FOR EACH ROW
WHEN (OLD.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
EXECUTE FUNCTION perdure.refuse_change_to_finished_run();
