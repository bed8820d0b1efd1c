-- The named queries of the throttle wing (postgres); see perdure.store.queries.

-- name: forget_failed_checks
DELETE FROM perdure.failed_checks WHERE until <= %(before)s;

-- name: open_failed_checks
-- A subject's row, made with no failures if it has none, so that the next query can lock it.
INSERT INTO perdure.failed_checks (subject, failures, until) VALUES (%(subject)s, 0, %(now)s)
ON CONFLICT (subject) DO NOTHING;

-- name: lock_failed_checks
-- Two servers counting the same subject at once: the second waits here for the first.
SELECT subject, failures, until FROM perdure.failed_checks WHERE subject = %(subject)s
FOR UPDATE;

-- name: lock_failed_checks_read
SELECT subject, failures, until FROM perdure.failed_checks WHERE subject = %(subject)s;

-- name: set_failed_checks
UPDATE perdure.failed_checks SET failures = %(failures)s, until = %(until)s
WHERE subject = %(subject)s;
