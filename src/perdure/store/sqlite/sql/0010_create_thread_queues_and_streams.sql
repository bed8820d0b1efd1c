-- One writer per thread, the thread inbox, and durable token streams.

-- A run's place in its thread's queue, numbered when the run is created (under the write lock).
-- Only the run with the lowest number among a thread's unfinished runs may be claimed, so the
-- runs of one thread run one at a time, in this order.
ALTER TABLE runs ADD COLUMN thread_seq INTEGER;

-- Number every run there is, finished ones included: the trigger that keeps finished runs final
-- is dropped for this statement only and created again (the whole migration is one
-- transaction).
DROP TRIGGER runs_terminal_is_final;

UPDATE runs
SET thread_seq = (SELECT COUNT(*) FROM runs AS earlier
                  WHERE earlier.tenant_id = runs.tenant_id
                    AND earlier.thread_id = runs.thread_id
                    AND (earlier.created_at < runs.created_at
                         OR (earlier.created_at = runs.created_at
                             AND earlier.run_id <= runs.run_id)));

CREATE TRIGGER runs_terminal_is_final
BEFORE UPDATE ON runs
WHEN OLD.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
BEGIN
    SELECT RAISE(ABORT, 'run_closed');
END;

CREATE UNIQUE INDEX runs_thread_queue ON runs (tenant_id, thread_id, thread_seq);

-- A thread's own policy for new input while a run of it is unfinished (no row: enqueue).
CREATE TABLE threads (
    tenant_id  TEXT NOT NULL,
    thread_id  TEXT NOT NULL,
    policy     TEXT NOT NULL CHECK (policy IN ('enqueue', 'interrupt', 'reject')),
    updated_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, thread_id)
) WITHOUT ROWID;

-- Input that waits for its turn on a busy thread (delivered_at set when it joins the thread's
-- messages): the messages a queued run was started with (run_id set) join when that run is
-- claimed; a message added from outside any run (run_id null) joins at the active run's next
-- boundary. Never in the middle of a step.
CREATE TABLE thread_inbox (
    id           INTEGER PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    thread_id    TEXT NOT NULL,
    run_id       TEXT REFERENCES runs (run_id),
    role         TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content      TEXT NOT NULL,
    tool_calls   TEXT,
    tool_call_id TEXT,
    received_at  TEXT NOT NULL,
    delivered_at TEXT
);

CREATE INDEX thread_inbox_pending ON thread_inbox (tenant_id, thread_id, delivered_at, id);

-- The head of one message's token stream: its newest attempt and the last number given out.
CREATE TABLE streams (
    tenant_id  TEXT NOT NULL,
    message_id TEXT NOT NULL,
    run_id     TEXT NOT NULL REFERENCES runs (run_id),
    attempt    INTEGER NOT NULL CHECK (attempt >= 1),
    last_seq   INTEGER NOT NULL CHECK (last_seq >= 0),
    finished   INTEGER NOT NULL DEFAULT 0 CHECK (finished IN (0, 1)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, message_id)
) WITHOUT ROWID;

-- Every entry of a message's stream, numbered across attempts (a number is never reused).
CREATE TABLE stream_entries (
    tenant_id  TEXT NOT NULL,
    message_id TEXT NOT NULL,
    seq        INTEGER NOT NULL CHECK (seq >= 1),
    attempt    INTEGER NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('delta', 'superseded', 'finished')),
    text       TEXT NOT NULL,
    PRIMARY KEY (tenant_id, message_id, seq)
) WITHOUT ROWID;
