-- The workflow version and state schema a run's stored state was last written with (the
-- release manifest keeps the ones it started under).

ALTER TABLE runs ADD COLUMN workflow_version INTEGER;
ALTER TABLE runs ADD COLUMN state_schema INTEGER;

UPDATE runs
SET workflow_version = json_extract(release, '$.workflow_version'),
    state_schema = json_extract(release, '$.state_schema');

CREATE INDEX runs_quarantined ON runs (status, workflow);
