-- Fields that only grow (a list of messages, notes, documents) are kept as a log: the field's
-- row holds a base value (log = true) and state_tails the items each later step appended, as
-- the JSON text that goes before the base's closing bracket. A step that appends writes its
-- tail, never the whole list. The history marks such a change with appended (value: the tail).

ALTER TABLE perdure.state_fields ADD COLUMN log boolean NOT NULL DEFAULT false;
ALTER TABLE perdure.state_history ADD COLUMN appended boolean NOT NULL DEFAULT false;

CREATE TABLE perdure.state_tails (
    run_id    text NOT NULL REFERENCES perdure.runs (run_id),
    tenant_id text NOT NULL,
    field     text NOT NULL,
    step_seq  integer NOT NULL CHECK (step_seq > 0),
    value     text NOT NULL,
    PRIMARY KEY (run_id, field, step_seq)
);
