-- index api_keys_live_name
CREATE UNIQUE INDEX api_keys_live_name ON api_keys (tenant_id, name) WHERE revoked_at IS NULL;

-- index approvals_by_run
CREATE INDEX approvals_by_run ON approvals (run_id, id);

-- index approvals_pending
CREATE INDEX approvals_pending ON approvals (tenant_id, status, id);

-- index artifacts_by_digest
CREATE INDEX artifacts_by_digest ON artifacts (tenant_id, digest);

-- index artifacts_by_run
CREATE INDEX artifacts_by_run ON artifacts (run_id, status);

-- index effects_by_run
CREATE INDEX effects_by_run ON effects (tenant_id, run_id, id);

-- index effects_by_status
CREATE INDEX effects_by_status ON effects (tenant_id, status);

-- index events_by_run
CREATE INDEX events_by_run ON events (run_id, seq);

-- index events_by_tenant
CREATE INDEX events_by_tenant ON events (tenant_id, seq);

-- index failed_checks_until
CREATE INDEX failed_checks_until ON failed_checks (until);

-- index forks_by_source
CREATE INDEX forks_by_source ON forks (tenant_id, source_run_id);

-- index graph_checkpoints_by_run
CREATE INDEX graph_checkpoints_by_run ON graph_checkpoints (tenant_id, graph_run_id);

-- index memory_by_expiry
CREATE INDEX memory_by_expiry ON memory (expires_at) WHERE expires_at IS NOT NULL;

-- index runs_by_tenant
CREATE INDEX runs_by_tenant ON runs (tenant_id, created_at);

-- index runs_by_thread
CREATE INDEX runs_by_thread ON runs (tenant_id, thread_id, created_at);

-- index runs_by_wake
CREATE INDEX runs_by_wake ON runs (wake_at);

-- index runs_children
CREATE UNIQUE INDEX runs_children ON runs (tenant_id, parent_run_id, child_key)
    WHERE parent_run_id IS NOT NULL;

-- index runs_claim_order
CREATE INDEX runs_claim_order ON runs (created_at)
WHERE status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED')
   OR (status = 'WAITING_EXTERNAL' AND wake_at IS NOT NULL);

-- index runs_quarantined
CREATE INDEX runs_quarantined ON runs (status, workflow);

-- index runs_runnable
CREATE INDEX runs_runnable ON runs (status, lease_until);

-- index runs_thread_queue
CREATE UNIQUE INDEX runs_thread_queue ON runs (tenant_id, thread_id, thread_seq);

-- index sessions_by_tenant
CREATE INDEX sessions_by_tenant ON sessions (tenant_id, created_at);

-- index sessions_open_by_key
CREATE INDEX sessions_open_by_key ON sessions (key_id) WHERE ended_at IS NULL;

-- index signals_inbox
CREATE INDEX signals_inbox ON signals (run_id, name, consumed_at, id);

-- index state_history_by_step
CREATE INDEX state_history_by_step ON state_history (run_id, step_seq);

-- index thread_inbox_pending
CREATE INDEX thread_inbox_pending ON thread_inbox (tenant_id, thread_id, delivered_at, id);

-- table api_keys
CREATE TABLE api_keys (
    key_id      TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    name        TEXT NOT NULL,
    roles       TEXT NOT NULL,
    secret_hash TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
) WITHOUT ROWID;

-- table approvals
CREATE TABLE approvals (
    id           INTEGER PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    run_id       TEXT NOT NULL REFERENCES runs (run_id),
    step         TEXT NOT NULL,
    role         TEXT NOT NULL,
    request      TEXT NOT NULL,
    on_approve   TEXT NOT NULL,
    on_reject    TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
    decided_by   TEXT,
    decided_role TEXT,
    comment      TEXT,
    request_id   TEXT,
    requested_at TEXT NOT NULL,
    decided_at   TEXT
);

-- table artifacts
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

-- table effects
CREATE TABLE effects (
    id           INTEGER PRIMARY KEY,
    effect_key   TEXT NOT NULL UNIQUE,
    tenant_id    TEXT NOT NULL,
    run_id       TEXT NOT NULL REFERENCES runs (run_id),
    step         TEXT NOT NULL,
    step_seq     INTEGER NOT NULL,
    name         TEXT NOT NULL,
    target       TEXT NOT NULL,
    operation    TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    request      TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN (
                     'planned', 'executing', 'confirmed', 'rejected', 'ambiguous',
                     'compensated')),
    attempts     INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    result       TEXT,
    receipt      TEXT,
    last_error   TEXT,
    compensator  TEXT,
    resolution   TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
, deadline TEXT);

-- table erasures
CREATE TABLE erasures (
    id         INTEGER PRIMARY KEY,
    tenant_id  TEXT NOT NULL,
    thread_id  TEXT,
    run_id     TEXT,
    counts     TEXT NOT NULL,
    erased_by  TEXT NOT NULL,
    at         TEXT NOT NULL
);

-- table events
CREATE TABLE events (
    seq       INTEGER PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    run_id    TEXT NOT NULL REFERENCES runs (run_id),
    type      TEXT NOT NULL,
    step      TEXT,
    fence     INTEGER,
    data      TEXT,
    at        TEXT NOT NULL
);

-- table failed_checks
CREATE TABLE failed_checks (
    subject TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    until TEXT NOT NULL
);

-- table forks
CREATE TABLE forks (
    run_id        TEXT PRIMARY KEY REFERENCES runs (run_id),
    tenant_id     TEXT NOT NULL,
    source_run_id TEXT NOT NULL,
    step_seq      INTEGER NOT NULL CHECK (step_seq >= 0),
    savepoint     TEXT,
    patched       TEXT,
    created_by    TEXT NOT NULL,
    created_at    TEXT NOT NULL
) WITHOUT ROWID;

-- table graph_blobs
CREATE TABLE graph_blobs (
    tenant_id     TEXT NOT NULL,
    thread_id     TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL,
    channel       TEXT NOT NULL,
    version       TEXT NOT NULL,
    type          TEXT NOT NULL,
    blob          BLOB,
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, channel, version)
) WITHOUT ROWID;

-- table graph_checkpoints
CREATE TABLE graph_checkpoints (
    tenant_id        TEXT NOT NULL,
    thread_id        TEXT NOT NULL,
    checkpoint_ns    TEXT NOT NULL,
    checkpoint_id    TEXT NOT NULL,
    run_id           TEXT NOT NULL REFERENCES runs (run_id),
    parent_id        TEXT,
    graph_run_id     TEXT,
    checkpoint_type  TEXT NOT NULL,
    checkpoint       BLOB NOT NULL,
    metadata         TEXT NOT NULL,
    channel_versions TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id)
) WITHOUT ROWID;

-- table graph_writes
CREATE TABLE graph_writes (
    tenant_id     TEXT NOT NULL,
    thread_id     TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    idx           INTEGER NOT NULL,
    channel       TEXT NOT NULL,
    type          TEXT NOT NULL,
    blob          BLOB,
    task_path     TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
) WITHOUT ROWID;

-- table memory
CREATE TABLE memory (
    tenant_id   TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    version     INTEGER NOT NULL CHECK (version >= 1),
    run_id      TEXT,
    step_seq    INTEGER,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    expires_at  TEXT, ttl_seconds REAL CHECK (ttl_seconds IS NULL OR ttl_seconds > 0),
    PRIMARY KEY (tenant_id, namespace, key)
);

-- table memory_vectors
CREATE TABLE memory_vectors (
    tenant_id   TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    key         TEXT NOT NULL,
    path        TEXT NOT NULL,
    dims        INTEGER NOT NULL CHECK (dims >= 1),
    vector      BLOB NOT NULL CHECK (length(vector) = 4 * dims),
    PRIMARY KEY (tenant_id, namespace, key, path),
    FOREIGN KEY (tenant_id, namespace, key) REFERENCES memory (tenant_id, namespace, key)
        ON DELETE CASCADE
);

-- table messages
CREATE TABLE messages (
    id           INTEGER PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    thread_id    TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    run_id       TEXT REFERENCES runs (run_id),
    role         TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content      TEXT NOT NULL,
    tool_calls   TEXT,
    tool_call_id TEXT,
    at           TEXT NOT NULL, step_seq INTEGER, content_artifact TEXT,
    UNIQUE (tenant_id, thread_id, seq)
);

-- table perdure_migrations
CREATE TABLE perdure_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at TEXT NOT NULL
);

-- table requests
CREATE TABLE requests (
    tenant_id  TEXT NOT NULL,
    request_id TEXT NOT NULL,
    operation  TEXT NOT NULL,
    result     TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, request_id)
) WITHOUT ROWID;

-- table runs
CREATE TABLE runs (
    run_id          TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL,
    thread_id       TEXT NOT NULL,
    workflow        TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN (
                        'PENDING', 'RUNNING', 'WAITING_APPROVAL', 'WAITING_EXTERNAL',
                        'NEEDS_ATTENTION', 'QUARANTINED', 'CANCEL_REQUESTED',
                        'SUCCEEDED', 'FAILED', 'CANCELLED')),
    next_step       TEXT,
    state_version   INTEGER NOT NULL DEFAULT 0 CHECK (state_version >= 0),
    fence           INTEGER NOT NULL DEFAULT 0 CHECK (fence >= 0),
    owner           TEXT,
    lease_until     TEXT,
    release         TEXT NOT NULL,
    idempotency_key TEXT,
    result          TEXT,
    error           TEXT,
    steps_done      INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL, wake_at TEXT, step_attempts INTEGER NOT NULL DEFAULT 0, retry_since TEXT, waiting TEXT, budget TEXT, workflow_version INTEGER, state_schema INTEGER, state_seal TEXT, thread_seq INTEGER, parent_run_id TEXT, child_key TEXT, step_takeovers INTEGER NOT NULL DEFAULT 0, takeover_step INTEGER,
    UNIQUE (tenant_id, idempotency_key)
);

-- table savepoints
CREATE TABLE savepoints (
    run_id     TEXT NOT NULL REFERENCES runs (run_id),
    tenant_id  TEXT NOT NULL,
    label      TEXT NOT NULL,
    step_seq   INTEGER NOT NULL CHECK (step_seq >= 0),
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    PRIMARY KEY (run_id, label)
) WITHOUT ROWID;

-- table sessions
CREATE TABLE sessions (
    session_id   TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    key_id       TEXT NOT NULL REFERENCES api_keys (key_id),
    secret_hash  TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    seen_at      TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    idle_seconds INTEGER NOT NULL CHECK (idle_seconds > 0),
    ended_at     TEXT,
    ended_why    TEXT,
    CHECK ((ended_at IS NULL) = (ended_why IS NULL))
) WITHOUT ROWID;

-- table signals
CREATE TABLE signals (
    id          INTEGER PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    run_id      TEXT NOT NULL REFERENCES runs (run_id),
    signal_id   TEXT NOT NULL,
    name        TEXT NOT NULL,
    payload     TEXT,
    received_at TEXT NOT NULL,
    consumed_at TEXT,
    UNIQUE (tenant_id, run_id, signal_id)
);

-- table state_fields
CREATE TABLE state_fields (
    run_id    TEXT NOT NULL REFERENCES runs (run_id),
    tenant_id TEXT NOT NULL,
    field     TEXT NOT NULL,
    value     TEXT NOT NULL, log INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, field)
) WITHOUT ROWID;

-- table state_history
CREATE TABLE state_history (
    run_id    TEXT NOT NULL REFERENCES runs (run_id),
    tenant_id TEXT NOT NULL,
    field     TEXT NOT NULL,
    step_seq  INTEGER NOT NULL CHECK (step_seq >= 0),
    version   INTEGER NOT NULL CHECK (version >= 0),
    value     TEXT, appended INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, field, step_seq, version)
) WITHOUT ROWID;

-- table state_tails
CREATE TABLE state_tails (
    run_id    TEXT NOT NULL REFERENCES runs (run_id),
    tenant_id TEXT NOT NULL,
    field     TEXT NOT NULL,
    step_seq  INTEGER NOT NULL CHECK (step_seq > 0),
    value     TEXT NOT NULL,
    PRIMARY KEY (run_id, field, step_seq)
) WITHOUT ROWID;

-- table steps
CREATE TABLE steps (
    run_id      TEXT NOT NULL REFERENCES runs (run_id),
    seq         INTEGER NOT NULL,
    tenant_id   TEXT NOT NULL,
    name        TEXT NOT NULL,
    fence       INTEGER NOT NULL,
    outcome     TEXT NOT NULL,
    next_step   TEXT,
    started_at  TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

-- table stream_entries
CREATE TABLE stream_entries (
    tenant_id  TEXT NOT NULL,
    message_id TEXT NOT NULL,
    seq        INTEGER NOT NULL CHECK (seq >= 1),
    attempt    INTEGER NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('delta', 'superseded', 'finished')),
    text       TEXT NOT NULL,
    PRIMARY KEY (tenant_id, message_id, seq)
) WITHOUT ROWID;

-- table streams
CREATE TABLE streams (
    tenant_id  TEXT NOT NULL,
    message_id TEXT NOT NULL,
    run_id     TEXT NOT NULL REFERENCES runs (run_id),
    attempt    INTEGER NOT NULL CHECK (attempt >= 1),
    last_seq   INTEGER NOT NULL CHECK (last_seq >= 0),
    finished   INTEGER NOT NULL DEFAULT 0 CHECK (finished IN (0, 1)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, message_id)
) WITHOUT ROWID;

-- table thread_inbox
CREATE TABLE thread_inbox (
    id           INTEGER PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    thread_id    TEXT NOT NULL,
    run_id       TEXT REFERENCES runs (run_id),
    role         TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content      TEXT NOT NULL,
    tool_calls   TEXT,
    tool_call_id TEXT,
    received_at  TEXT NOT NULL,
    delivered_at TEXT
);

-- table threads
CREATE TABLE threads (
    tenant_id  TEXT NOT NULL,
    thread_id  TEXT NOT NULL,
    policy     TEXT NOT NULL CHECK (policy IN ('enqueue', 'interrupt', 'reject')),
    updated_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, thread_id)
) WITHOUT ROWID;

-- table workers
CREATE TABLE workers (
    owner       TEXT PRIMARY KEY,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    concurrency INTEGER NOT NULL,
    runs_held   INTEGER NOT NULL,
    started_at  TEXT NOT NULL,
    last_beat   TEXT NOT NULL,
    stopped_at  TEXT
, beat_seconds REAL) WITHOUT ROWID;

-- trigger runs_terminal_is_final
CREATE TRIGGER runs_terminal_is_final
BEFORE UPDATE ON runs
WHEN OLD.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
BEGIN
    SELECT RAISE(ABORT, 'run_closed');
END;
