-- Artifacts: one row per reference a run holds to a content-addressed object (sha256 digest,
-- size, media type), written BEFORE the upload ('uploaded') and marked 'committed' in the step
-- boundary that records the reference. An 'uploaded' row whose run moved on without committing
-- it is an orphan that gc collects. parents is a JSON list of the digests it was made from.
-- A message whose content was offloaded keeps the reference in content_artifact.
-- erasures records that a thread or run was erased (ids and counts, never content).

CREATE TABLE artifacts (
    id           INTEGER PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    run_id       TEXT NOT NULL REFERENCES runs (run_id),
    step         TEXT,
    step_seq     INTEGER,
    fence        INTEGER NOT NULL,
    digest       TEXT NOT NULL,
    size         INTEGER NOT NULL CHECK (size >= 0),
    media_type   TEXT NOT NULL,
    parents      TEXT,
    status       TEXT NOT NULL CHECK (status IN ('uploaded', 'committed')),
    created_at   TEXT NOT NULL,
    committed_at TEXT
);

CREATE INDEX artifacts_by_digest ON artifacts (tenant_id, digest);
CREATE INDEX artifacts_by_run ON artifacts (run_id, status);

ALTER TABLE messages ADD COLUMN content_artifact TEXT;

CREATE TABLE erasures (
    id         INTEGER PRIMARY KEY,
    tenant_id  TEXT NOT NULL,
    thread_id  TEXT,
    run_id     TEXT,
    counts     TEXT NOT NULL,
    erased_by  TEXT NOT NULL,
    at         TEXT NOT NULL
);
