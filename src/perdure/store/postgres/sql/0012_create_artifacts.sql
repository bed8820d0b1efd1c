-- Artifacts: one row per reference a run holds to a content-addressed object (sha256 digest,
-- size, media type), written BEFORE the upload ('uploaded') and marked 'committed' in the step
-- boundary that records the reference. An 'uploaded' row whose run moved on without committing
-- it is an orphan that gc collects. parents is a JSON list of the digests it was made from.
-- A message whose content was offloaded keeps the reference in content_artifact.
-- erasures records that a thread or run was erased (ids and counts, never content).

CREATE TABLE perdure.artifacts (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id    text NOT NULL,
    run_id       text NOT NULL REFERENCES perdure.runs (run_id),
    step         text,
    step_seq     integer,
    fence        bigint NOT NULL,
    digest       text NOT NULL,
    size         bigint NOT NULL CHECK (size >= 0),
    media_type   text NOT NULL,
    parents      json,
    status       text NOT NULL CHECK (status IN ('uploaded', 'committed')),
    created_at   timestamptz NOT NULL,
    committed_at timestamptz
);

CREATE INDEX artifacts_by_digest ON perdure.artifacts (tenant_id, digest);
CREATE INDEX artifacts_by_run ON perdure.artifacts (run_id, status);

ALTER TABLE perdure.messages ADD COLUMN content_artifact json;

CREATE TABLE perdure.erasures (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id  text NOT NULL,
    thread_id  text,
    run_id     text,
    counts     json NOT NULL,
    erased_by  text NOT NULL,
    at         timestamptz NOT NULL
);
