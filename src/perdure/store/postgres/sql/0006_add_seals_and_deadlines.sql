-- The run's sealed record of which state write each stored field comes from (see
-- perdure.core.seal.StateSeal); NULL for runs without a keyring and runs sealed before it.

ALTER TABLE perdure.runs ADD COLUMN state_seal text;

-- When the current attempt of an executing effect must have given up (its call timeout, from
-- the effect's deadline); NULL when the effect has none.

ALTER TABLE perdure.effects ADD COLUMN deadline timestamptz;

-- How often each worker beats (seconds): it is dead once it missed enough beats.

ALTER TABLE perdure.workers ADD COLUMN beat_seconds double precision;
