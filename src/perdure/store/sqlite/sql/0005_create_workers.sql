-- Live workers (for `perdure workers`): each one beats here while it runs.

CREATE TABLE workers (
    owner       TEXT PRIMARY KEY,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    concurrency INTEGER NOT NULL,
    runs_held   INTEGER NOT NULL,
    started_at  TEXT NOT NULL,
    last_beat   TEXT NOT NULL,
    stopped_at  TEXT
) WITHOUT ROWID;

CREATE INDEX runs_by_wake ON runs (wake_at);
