-- Fields that only grow (a list of messages, notes, documents) are kept as a log: the field's
-- row holds a base value (log = 1) and state_tails the items each later step appended, as the
-- JSON text that goes before the base's closing bracket. A step that appends writes its tail,
-- never the whole list. The history marks such a change with appended = 1 (value: the tail).

ALTER TABLE state_fields ADD COLUMN log INTEGER NOT NULL DEFAULT 0;
ALTER TABLE state_history ADD COLUMN appended INTEGER NOT NULL DEFAULT 0;

CREATE TABLE state_tails (
    run_id    TEXT NOT NULL REFERENCES runs (run_id),
    tenant_id TEXT NOT NULL,
    field     TEXT NOT NULL,
    step_seq  INTEGER NOT NULL CHECK (step_seq > 0),
    value     TEXT NOT NULL,
    PRIMARY KEY (run_id, field, step_seq)
) WITHOUT ROWID;
