-- State history, savepoints and forks. Every value a state field takes is kept as a delta,
-- keyed by the step after which it was written (0: the initial state), so the state at any
-- step can be rebuilt; state_fields stays the current state. A NULL value records a field that
-- was removed. Messages learn the step that appended them (0: with the run's start).

CREATE TABLE state_history (
    run_id    TEXT NOT NULL REFERENCES runs (run_id),
    tenant_id TEXT NOT NULL,
    field     TEXT NOT NULL,
    step_seq  INTEGER NOT NULL CHECK (step_seq >= 0),
    version   INTEGER NOT NULL CHECK (version >= 0),
    value     TEXT,
    PRIMARY KEY (run_id, field, step_seq, version)
) WITHOUT ROWID;

CREATE INDEX state_history_by_step ON state_history (run_id, step_seq);

CREATE TABLE savepoints (
    run_id     TEXT NOT NULL REFERENCES runs (run_id),
    tenant_id  TEXT NOT NULL,
    label      TEXT NOT NULL,
    step_seq   INTEGER NOT NULL CHECK (step_seq >= 0),
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    PRIMARY KEY (run_id, label)
) WITHOUT ROWID;

CREATE TABLE forks (
    run_id        TEXT PRIMARY KEY REFERENCES runs (run_id),
    tenant_id     TEXT NOT NULL,
    source_run_id TEXT NOT NULL,
    step_seq      INTEGER NOT NULL CHECK (step_seq >= 0),
    savepoint     TEXT,
    patched       TEXT,
    created_by    TEXT NOT NULL,
    created_at    TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX forks_by_source ON forks (tenant_id, source_run_id);

ALTER TABLE messages ADD COLUMN step_seq INTEGER;
