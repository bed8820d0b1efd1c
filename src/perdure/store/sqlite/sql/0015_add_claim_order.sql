-- The worker's scan (pick_next) takes the oldest run that may be claimed. With no index in
-- that order it read and sorted every unfinished run at each claim (5,000 queued runs: 7 ms
-- per claim on SQLite, 29 ms on PostgreSQL, analysed or not). This index holds the runs that
-- may become claimable, oldest first (not those waiting for a person or a signal with no
-- timer, which may wait for days): the scan reads from the oldest and stops at the first it
-- may claim.
CREATE INDEX runs_claim_order ON runs (created_at)
WHERE status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED')
   OR (status = 'WAITING_EXTERNAL' AND wake_at IS NOT NULL);
