-- Child runs: a run a step of another run started with ctx.spawn(workflow, input, key=...).
-- parent_run_id names the parent (same tenant), child_key the key the parent gave it.

ALTER TABLE runs ADD COLUMN parent_run_id TEXT;
ALTER TABLE runs ADD COLUMN child_key TEXT;

CREATE UNIQUE INDEX runs_children ON runs (tenant_id, parent_run_id, child_key)
    WHERE parent_run_id IS NOT NULL;
