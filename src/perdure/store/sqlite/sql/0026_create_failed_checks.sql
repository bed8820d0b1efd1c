-- Failed credential checks per subject (a client address, a key id), shared by every server
-- on the database: the throttle wing (perdure.store.wings.throttle). Only failures are
-- counted; a row quiet past the policy's forget time is deleted by the next failure.
CREATE TABLE failed_checks (
    subject TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    until TEXT NOT NULL
);
CREATE INDEX failed_checks_until ON failed_checks (until);
