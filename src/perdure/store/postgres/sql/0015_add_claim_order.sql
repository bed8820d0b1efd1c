-- The worker's scan (pick_next) takes the oldest run that may be claimed. With no index in
-- that order it read and sorted every unfinished run at each claim (5,000 queued runs: 7 ms
-- per claim on SQLite, 29 ms on PostgreSQL, analysed or not). This index holds the runs that
-- may become claimable, oldest first (not those waiting for a person or a signal with no
-- timer, which may wait for days): the scan reads from the oldest and stops at the first it
-- may claim.
-- (Built in the migration's transaction: writes to runs wait while it is built, about 10 ms
-- per 10,000 unfinished runs.)
CREATE INDEX runs_claim_order ON perdure.runs (created_at)
WHERE status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED')
   OR (status = 'WAITING_EXTERNAL' AND wake_at IS NOT NULL);
