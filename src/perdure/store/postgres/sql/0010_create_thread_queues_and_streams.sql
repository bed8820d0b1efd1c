-- One writer per thread, the thread inbox, and durable token streams.

-- A run's place in its thread's queue, numbered when the run is created (under the thread's
-- advisory lock). Only the run with the lowest number among a thread's unfinished runs may be
-- claimed, so the runs of one thread run one at a time, in this order.
ALTER TABLE perdure.runs ADD COLUMN thread_seq bigint;

-- Number every run there is, finished ones included: the trigger that keeps finished runs final
-- is off for this statement only (the whole migration is one transaction).
ALTER TABLE perdure.runs DISABLE TRIGGER runs_terminal_is_final;
UPDATE perdure.runs AS r
SET thread_seq = numbered.n
FROM (SELECT run_id, row_number() OVER (PARTITION BY tenant_id, thread_id
                                         ORDER BY created_at, run_id) AS n
      FROM perdure.runs) AS numbered
WHERE numbered.run_id = r.run_id;
ALTER TABLE perdure.runs ENABLE TRIGGER runs_terminal_is_final;

CREATE UNIQUE INDEX runs_thread_queue ON perdure.runs (tenant_id, thread_id, thread_seq);

-- When a run ends, the next run of its thread may be claimable: wake idle workers.
CREATE TRIGGER runs_notify_thread_free
AFTER UPDATE OF status ON perdure.runs
FOR EACH ROW
WHEN (NEW.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
      AND OLD.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
EXECUTE FUNCTION perdure.notify_work();

-- A thread's own policy for new input while a run of it is unfinished (no row: enqueue).
CREATE TABLE perdure.threads (
    tenant_id  text NOT NULL,
    thread_id  text NOT NULL,
    policy     text NOT NULL CHECK (policy IN ('enqueue', 'interrupt', 'reject')),
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, thread_id)
);

-- Input that waits for its turn on a busy thread (delivered_at set when it joins the thread's
-- messages): the messages a queued run was started with (run_id set) join when that run is
-- claimed; a message added from outside any run (run_id null) joins at the active run's next
-- boundary. Never in the middle of a step.
CREATE TABLE perdure.thread_inbox (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id    text NOT NULL,
    thread_id    text NOT NULL,
    run_id       text REFERENCES perdure.runs (run_id),
    role         text NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content      text NOT NULL,
    tool_calls   json,
    tool_call_id text,
    received_at  timestamptz NOT NULL,
    delivered_at timestamptz
);

CREATE INDEX thread_inbox_pending ON perdure.thread_inbox (tenant_id, thread_id, delivered_at, id);

-- The head of one message's token stream: its newest attempt and the last number given out.
-- Every write to a stream updates this row first, so writers of one message queue on its lock.
CREATE TABLE perdure.streams (
    tenant_id  text NOT NULL,
    message_id text NOT NULL,
    run_id     text NOT NULL REFERENCES perdure.runs (run_id),
    attempt    integer NOT NULL CHECK (attempt >= 1),
    last_seq   bigint NOT NULL CHECK (last_seq >= 0),
    finished   boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, message_id)
);

-- Every entry of a message's stream, numbered across attempts (a number is never reused).
CREATE TABLE perdure.stream_entries (
    tenant_id  text NOT NULL,
    message_id text NOT NULL,
    seq        bigint NOT NULL CHECK (seq >= 1),
    attempt    integer NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('delta', 'superseded', 'finished')),
    text       text NOT NULL,
    PRIMARY KEY (tenant_id, message_id, seq)
);

-- Readers that follow a stream are woken on channel perdure_stream when it grows; the payload
-- is the tenant and message id, and readers always re-read the store.
CREATE FUNCTION perdure.notify_stream() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('perdure_stream', NEW.tenant_id || '/' || NEW.message_id);
    RETURN NULL;
END
$$;

CREATE TRIGGER streams_notify
AFTER INSERT OR UPDATE ON perdure.streams
FOR EACH ROW
EXECUTE FUNCTION perdure.notify_stream();
