-- The workflow version and state schema a run's stored state was last written with (the
-- release manifest keeps the ones it started under).

ALTER TABLE perdure.runs ADD COLUMN workflow_version integer;
ALTER TABLE perdure.runs ADD COLUMN state_schema integer;

-- Backfill every run, finished ones included: the trigger that keeps finished runs final is
-- off for this statement only (the whole migration is one transaction).
ALTER TABLE perdure.runs DISABLE TRIGGER runs_terminal_is_final;
UPDATE perdure.runs
SET workflow_version = (release ->> 'workflow_version')::integer,
    state_schema = (release ->> 'state_schema')::integer;
ALTER TABLE perdure.runs ENABLE TRIGGER runs_terminal_is_final;

CREATE INDEX runs_quarantined ON perdure.runs (status, workflow);
