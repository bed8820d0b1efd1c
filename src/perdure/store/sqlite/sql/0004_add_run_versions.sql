-- The workflow version and state schema a run's stored state was last written with (the
-- release manifest keeps the ones it started under).

ALTER TABLE runs ADD COLUMN workflow_version INTEGER;
ALTER TABLE runs ADD COLUMN state_schema INTEGER;

-- Backfill every run, finished ones included: the trigger that keeps finished runs final is
-- dropped for this statement only and created again (the whole migration is one transaction).
DROP TRIGGER runs_terminal_is_final;

UPDATE runs
SET workflow_version = json_extract(release, '$.workflow_version'),
    state_schema = json_extract(release, '$.state_schema');

CREATE TRIGGER runs_terminal_is_final
BEFORE UPDATE ON runs
WHEN OLD.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
BEGIN
    SELECT RAISE(ABORT, 'run_closed');
END;

CREATE INDEX runs_quarantined ON runs (status, workflow);
