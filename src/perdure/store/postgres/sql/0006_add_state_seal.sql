-- The run's sealed record of which state write each stored field comes from (see
-- perdure.core.seal.StateSeal); NULL for runs without a keyring and runs sealed before it.

ALTER TABLE perdure.runs ADD COLUMN state_seal text;
