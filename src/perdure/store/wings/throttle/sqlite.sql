-- The named queries of the throttle wing (sqlite); see perdure.store.queries.

-- name: forget_failed_checks
DELETE FROM failed_checks WHERE until <= :before;

-- name: open_failed_checks
-- A subject's row, made with no failures if it has none (the write lock is already held).
INSERT INTO failed_checks (subject, failures, until) VALUES (:subject, 0, :now)
ON CONFLICT (subject) DO NOTHING;

-- name: lock_failed_checks
SELECT subject, failures, until FROM failed_checks WHERE subject = :subject;

-- name: lock_failed_checks_read
SELECT subject, failures, until FROM failed_checks WHERE subject = :subject;

-- name: set_failed_checks
UPDATE failed_checks SET failures = :failures, until = :until WHERE subject = :subject;
