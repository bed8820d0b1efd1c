-- table api_keys
CREATE TABLE perdure.api_keys (
    key_id text NOT NULL,
    tenant_id text NOT NULL,
    name text NOT NULL,
    roles json NOT NULL,
    secret_hash text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT api_keys_pkey PRIMARY KEY (key_id)
);

-- table approvals
CREATE TABLE perdure.approvals (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    tenant_id text NOT NULL,
    run_id text NOT NULL,
    step text NOT NULL,
    role text NOT NULL,
    request json NOT NULL,
    on_approve text NOT NULL,
    on_reject text NOT NULL,
    status text NOT NULL,
    decided_by text,
    decided_role text,
    comment text,
    request_id text,
    requested_at timestamp with time zone NOT NULL,
    decided_at timestamp with time zone,
    CONSTRAINT approvals_pkey PRIMARY KEY (id),
    CONSTRAINT approvals_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id),
    CONSTRAINT approvals_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'approved'::text, 'rejected'::text])))
);

-- table artifacts
CREATE TABLE perdure.artifacts (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    tenant_id text NOT NULL,
    run_id text NOT NULL,
    step text,
    step_seq integer,
    fence bigint NOT NULL,
    digest text NOT NULL,
    size bigint NOT NULL,
    media_type text NOT NULL,
    parents json,
    status text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    committed_at timestamp with time zone,
    CONSTRAINT artifacts_pkey PRIMARY KEY (id),
    CONSTRAINT artifacts_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id),
    CONSTRAINT artifacts_size_check CHECK ((size >= 0)),
    CONSTRAINT artifacts_status_check CHECK ((status = ANY (ARRAY['uploaded'::text, 'committed'::text])))
);

-- table effects
CREATE TABLE perdure.effects (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    effect_key text NOT NULL,
    tenant_id text NOT NULL,
    run_id text NOT NULL,
    step text NOT NULL,
    step_seq integer NOT NULL,
    name text NOT NULL,
    target text NOT NULL,
    operation text NOT NULL,
    request_hash text NOT NULL,
    request json NOT NULL,
    status text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    result json,
    receipt text,
    last_error json,
    compensator text,
    resolution json,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    deadline timestamp with time zone,
    CONSTRAINT effects_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT effects_effect_key_key UNIQUE (effect_key),
    CONSTRAINT effects_pkey PRIMARY KEY (id),
    CONSTRAINT effects_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id),
    CONSTRAINT effects_status_check CHECK ((status = ANY (ARRAY['planned'::text, 'executing'::text, 'confirmed'::text, 'rejected'::text, 'ambiguous'::text, 'compensated'::text])))
);

-- table erasures
CREATE TABLE perdure.erasures (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    tenant_id text NOT NULL,
    thread_id text,
    run_id text,
    counts json NOT NULL,
    erased_by text NOT NULL,
    at timestamp with time zone NOT NULL,
    CONSTRAINT erasures_pkey PRIMARY KEY (id)
);

-- table events
CREATE TABLE perdure.events (
    seq bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    tenant_id text NOT NULL,
    run_id text NOT NULL,
    type text NOT NULL,
    step text,
    fence bigint,
    data json,
    at timestamp with time zone NOT NULL,
    CONSTRAINT events_pkey PRIMARY KEY (seq),
    CONSTRAINT events_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id)
);

-- table failed_checks
CREATE TABLE perdure.failed_checks (
    subject text NOT NULL,
    failures integer NOT NULL,
    until timestamp with time zone NOT NULL,
    CONSTRAINT failed_checks_pkey PRIMARY KEY (subject)
);

-- table forks
CREATE TABLE perdure.forks (
    run_id text NOT NULL,
    tenant_id text NOT NULL,
    source_run_id text NOT NULL,
    step_seq integer NOT NULL,
    savepoint text,
    patched json,
    created_by text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT forks_pkey PRIMARY KEY (run_id),
    CONSTRAINT forks_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id),
    CONSTRAINT forks_step_seq_check CHECK ((step_seq >= 0))
);

-- table graph_blobs
CREATE TABLE perdure.graph_blobs (
    tenant_id text NOT NULL,
    thread_id text NOT NULL,
    checkpoint_ns text NOT NULL,
    channel text NOT NULL,
    version text NOT NULL,
    type text NOT NULL,
    blob bytea,
    CONSTRAINT graph_blobs_pkey PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, channel, version)
);

-- table graph_checkpoints
CREATE TABLE perdure.graph_checkpoints (
    tenant_id text NOT NULL,
    thread_id text NOT NULL,
    checkpoint_ns text NOT NULL,
    checkpoint_id text NOT NULL,
    run_id text NOT NULL,
    parent_id text,
    graph_run_id text,
    checkpoint_type text NOT NULL,
    checkpoint bytea NOT NULL,
    metadata jsonb NOT NULL,
    channel_versions jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT graph_checkpoints_pkey PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id),
    CONSTRAINT graph_checkpoints_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id)
);

-- table graph_writes
CREATE TABLE perdure.graph_writes (
    tenant_id text NOT NULL,
    thread_id text NOT NULL,
    checkpoint_ns text NOT NULL,
    checkpoint_id text NOT NULL,
    task_id text NOT NULL,
    idx integer NOT NULL,
    channel text NOT NULL,
    type text NOT NULL,
    blob bytea,
    task_path text DEFAULT ''::text NOT NULL,
    CONSTRAINT graph_writes_pkey PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);

-- table memory
CREATE TABLE perdure.memory (
    tenant_id text NOT NULL,
    namespace text NOT NULL,
    key text NOT NULL,
    value json NOT NULL,
    version bigint NOT NULL,
    run_id text,
    step_seq integer,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone,
    ttl_seconds double precision,
    CONSTRAINT memory_pkey PRIMARY KEY (tenant_id, namespace, key),
    CONSTRAINT memory_ttl_seconds_check CHECK (((ttl_seconds IS NULL) OR (ttl_seconds > (0)::double precision))),
    CONSTRAINT memory_version_check CHECK ((version >= 1))
);

-- table memory_vectors
CREATE TABLE perdure.memory_vectors (
    tenant_id text NOT NULL,
    namespace text NOT NULL,
    key text NOT NULL,
    path text NOT NULL,
    dims integer NOT NULL,
    vector bytea NOT NULL,
    CONSTRAINT memory_vectors_check CHECK ((length(vector) = (4 * dims))),
    CONSTRAINT memory_vectors_dims_check CHECK ((dims >= 1)),
    CONSTRAINT memory_vectors_pkey PRIMARY KEY (tenant_id, namespace, key, path),
    CONSTRAINT memory_vectors_tenant_id_namespace_key_fkey FOREIGN KEY (tenant_id, namespace, key) REFERENCES perdure.memory(tenant_id, namespace, key) ON DELETE CASCADE
);

-- table messages
CREATE TABLE perdure.messages (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    tenant_id text NOT NULL,
    thread_id text NOT NULL,
    seq integer NOT NULL,
    run_id text,
    role text NOT NULL,
    content text NOT NULL,
    tool_calls json,
    tool_call_id text,
    at timestamp with time zone NOT NULL,
    step_seq integer,
    content_artifact json,
    CONSTRAINT messages_pkey PRIMARY KEY (id),
    CONSTRAINT messages_role_check CHECK ((role = ANY (ARRAY['system'::text, 'user'::text, 'assistant'::text, 'tool'::text]))),
    CONSTRAINT messages_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id),
    CONSTRAINT messages_tenant_id_thread_id_seq_key UNIQUE (tenant_id, thread_id, seq)
);

-- table perdure_migrations
CREATE TABLE perdure.perdure_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone NOT NULL,
    CONSTRAINT perdure_migrations_pkey PRIMARY KEY (version)
);

-- table requests
CREATE TABLE perdure.requests (
    tenant_id text NOT NULL,
    request_id text NOT NULL,
    operation text NOT NULL,
    result json,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT requests_pkey PRIMARY KEY (tenant_id, request_id)
);

-- table runs
CREATE TABLE perdure.runs (
    run_id text NOT NULL,
    tenant_id text NOT NULL,
    thread_id text NOT NULL,
    workflow text NOT NULL,
    status text NOT NULL,
    next_step text,
    state_version bigint DEFAULT 0 NOT NULL,
    fence bigint DEFAULT 0 NOT NULL,
    owner text,
    lease_until timestamp with time zone,
    release json NOT NULL,
    idempotency_key text,
    result json,
    error json,
    steps_done integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    wake_at timestamp with time zone,
    step_attempts integer DEFAULT 0 NOT NULL,
    retry_since timestamp with time zone,
    waiting json,
    budget json,
    workflow_version integer,
    state_schema integer,
    state_seal text,
    thread_seq bigint,
    parent_run_id text,
    child_key text,
    step_takeovers integer DEFAULT 0 NOT NULL,
    takeover_step integer,
    CONSTRAINT runs_fence_check CHECK ((fence >= 0)),
    CONSTRAINT runs_pkey PRIMARY KEY (run_id),
    CONSTRAINT runs_state_version_check CHECK ((state_version >= 0)),
    CONSTRAINT runs_status_check CHECK ((status = ANY (ARRAY['PENDING'::text, 'RUNNING'::text, 'WAITING_APPROVAL'::text, 'WAITING_EXTERNAL'::text, 'NEEDS_ATTENTION'::text, 'QUARANTINED'::text, 'CANCEL_REQUESTED'::text, 'SUCCEEDED'::text, 'FAILED'::text, 'CANCELLED'::text]))),
    CONSTRAINT runs_tenant_id_idempotency_key_key UNIQUE (tenant_id, idempotency_key)
);

-- table savepoints
CREATE TABLE perdure.savepoints (
    run_id text NOT NULL,
    tenant_id text NOT NULL,
    label text NOT NULL,
    step_seq integer NOT NULL,
    created_by text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone,
    CONSTRAINT savepoints_pkey PRIMARY KEY (run_id, label),
    CONSTRAINT savepoints_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id),
    CONSTRAINT savepoints_step_seq_check CHECK ((step_seq >= 0))
);

-- table sessions
CREATE TABLE perdure.sessions (
    session_id text NOT NULL,
    tenant_id text NOT NULL,
    key_id text NOT NULL,
    secret_hash text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    seen_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    idle_seconds integer NOT NULL,
    ended_at timestamp with time zone,
    ended_why text,
    CONSTRAINT sessions_check CHECK (((ended_at IS NULL) = (ended_why IS NULL))),
    CONSTRAINT sessions_idle_seconds_check CHECK ((idle_seconds > 0)),
    CONSTRAINT sessions_key_id_fkey FOREIGN KEY (key_id) REFERENCES perdure.api_keys(key_id),
    CONSTRAINT sessions_pkey PRIMARY KEY (session_id)
);

-- table signals
CREATE TABLE perdure.signals (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    tenant_id text NOT NULL,
    run_id text NOT NULL,
    signal_id text NOT NULL,
    name text NOT NULL,
    payload json,
    received_at timestamp with time zone NOT NULL,
    consumed_at timestamp with time zone,
    CONSTRAINT signals_pkey PRIMARY KEY (id),
    CONSTRAINT signals_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id),
    CONSTRAINT signals_tenant_id_run_id_signal_id_key UNIQUE (tenant_id, run_id, signal_id)
);

-- table state_fields
CREATE TABLE perdure.state_fields (
    run_id text NOT NULL,
    tenant_id text NOT NULL,
    field text NOT NULL,
    value text NOT NULL,
    log boolean DEFAULT false NOT NULL,
    CONSTRAINT state_fields_pkey PRIMARY KEY (run_id, field),
    CONSTRAINT state_fields_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id)
);

-- table state_history
CREATE TABLE perdure.state_history (
    run_id text NOT NULL,
    tenant_id text NOT NULL,
    field text NOT NULL,
    step_seq integer NOT NULL,
    version bigint NOT NULL,
    value text,
    appended boolean DEFAULT false NOT NULL,
    CONSTRAINT state_history_pkey PRIMARY KEY (run_id, field, step_seq, version),
    CONSTRAINT state_history_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id),
    CONSTRAINT state_history_step_seq_check CHECK ((step_seq >= 0)),
    CONSTRAINT state_history_version_check CHECK ((version >= 0))
);

-- table state_tails
CREATE TABLE perdure.state_tails (
    run_id text NOT NULL,
    tenant_id text NOT NULL,
    field text NOT NULL,
    step_seq integer NOT NULL,
    value text NOT NULL,
    CONSTRAINT state_tails_pkey PRIMARY KEY (run_id, field, step_seq),
    CONSTRAINT state_tails_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id),
    CONSTRAINT state_tails_step_seq_check CHECK ((step_seq > 0))
);

-- table steps
CREATE TABLE perdure.steps (
    run_id text NOT NULL,
    seq integer NOT NULL,
    tenant_id text NOT NULL,
    name text NOT NULL,
    fence bigint NOT NULL,
    outcome text NOT NULL,
    next_step text,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    CONSTRAINT steps_pkey PRIMARY KEY (run_id, seq),
    CONSTRAINT steps_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id)
);

-- table stream_entries
CREATE TABLE perdure.stream_entries (
    tenant_id text NOT NULL,
    message_id text NOT NULL,
    seq bigint NOT NULL,
    attempt integer NOT NULL,
    kind text NOT NULL,
    text text NOT NULL,
    CONSTRAINT stream_entries_kind_check CHECK ((kind = ANY (ARRAY['delta'::text, 'superseded'::text, 'finished'::text]))),
    CONSTRAINT stream_entries_pkey PRIMARY KEY (tenant_id, message_id, seq),
    CONSTRAINT stream_entries_seq_check CHECK ((seq >= 1))
);

-- table streams
CREATE TABLE perdure.streams (
    tenant_id text NOT NULL,
    message_id text NOT NULL,
    run_id text NOT NULL,
    attempt integer NOT NULL,
    last_seq bigint NOT NULL,
    finished boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT streams_attempt_check CHECK ((attempt >= 1)),
    CONSTRAINT streams_last_seq_check CHECK ((last_seq >= 0)),
    CONSTRAINT streams_pkey PRIMARY KEY (tenant_id, message_id),
    CONSTRAINT streams_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id)
);

-- table thread_inbox
CREATE TABLE perdure.thread_inbox (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    tenant_id text NOT NULL,
    thread_id text NOT NULL,
    run_id text,
    role text NOT NULL,
    content text NOT NULL,
    tool_calls json,
    tool_call_id text,
    received_at timestamp with time zone NOT NULL,
    delivered_at timestamp with time zone,
    CONSTRAINT thread_inbox_pkey PRIMARY KEY (id),
    CONSTRAINT thread_inbox_role_check CHECK ((role = ANY (ARRAY['system'::text, 'user'::text, 'assistant'::text, 'tool'::text]))),
    CONSTRAINT thread_inbox_run_id_fkey FOREIGN KEY (run_id) REFERENCES perdure.runs(run_id)
);

-- table threads
CREATE TABLE perdure.threads (
    tenant_id text NOT NULL,
    thread_id text NOT NULL,
    policy text NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT threads_pkey PRIMARY KEY (tenant_id, thread_id),
    CONSTRAINT threads_policy_check CHECK ((policy = ANY (ARRAY['enqueue'::text, 'interrupt'::text, 'reject'::text])))
);

-- table workers
CREATE TABLE perdure.workers (
    owner text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    concurrency integer NOT NULL,
    runs_held integer NOT NULL,
    started_at timestamp with time zone NOT NULL,
    last_beat timestamp with time zone NOT NULL,
    stopped_at timestamp with time zone,
    beat_seconds double precision,
    CONSTRAINT workers_pkey PRIMARY KEY (owner)
);

-- index api_keys_live_name
CREATE UNIQUE INDEX api_keys_live_name ON perdure.api_keys USING btree (tenant_id, name) WHERE (revoked_at IS NULL);

-- index approvals_by_run
CREATE INDEX approvals_by_run ON perdure.approvals USING btree (run_id, id);

-- index approvals_pending
CREATE INDEX approvals_pending ON perdure.approvals USING btree (tenant_id, status, id);

-- index artifacts_by_digest
CREATE INDEX artifacts_by_digest ON perdure.artifacts USING btree (tenant_id, digest);

-- index artifacts_by_run
CREATE INDEX artifacts_by_run ON perdure.artifacts USING btree (run_id, status);

-- index effects_by_run
CREATE INDEX effects_by_run ON perdure.effects USING btree (tenant_id, run_id, id);

-- index effects_by_status
CREATE INDEX effects_by_status ON perdure.effects USING btree (tenant_id, status);

-- index events_by_run
CREATE INDEX events_by_run ON perdure.events USING btree (run_id, seq);

-- index events_by_tenant
CREATE INDEX events_by_tenant ON perdure.events USING btree (tenant_id, seq);

-- index failed_checks_until
CREATE INDEX failed_checks_until ON perdure.failed_checks USING btree (until);

-- index forks_by_source
CREATE INDEX forks_by_source ON perdure.forks USING btree (tenant_id, source_run_id);

-- index graph_checkpoints_by_run
CREATE INDEX graph_checkpoints_by_run ON perdure.graph_checkpoints USING btree (tenant_id, graph_run_id);

-- index memory_by_expiry
CREATE INDEX memory_by_expiry ON perdure.memory USING btree (expires_at) WHERE (expires_at IS NOT NULL);

-- index runs_by_tenant
CREATE INDEX runs_by_tenant ON perdure.runs USING btree (tenant_id, created_at);

-- index runs_by_thread
CREATE INDEX runs_by_thread ON perdure.runs USING btree (tenant_id, thread_id, created_at);

-- index runs_by_wake
CREATE INDEX runs_by_wake ON perdure.runs USING btree (wake_at);

-- index runs_children
CREATE UNIQUE INDEX runs_children ON perdure.runs USING btree (tenant_id, parent_run_id, child_key) WHERE (parent_run_id IS NOT NULL);

-- index runs_claim_order
CREATE INDEX runs_claim_order ON perdure.runs USING btree (created_at) WHERE ((status = ANY (ARRAY['PENDING'::text, 'RUNNING'::text, 'CANCEL_REQUESTED'::text])) OR ((status = 'WAITING_EXTERNAL'::text) AND (wake_at IS NOT NULL)));

-- index runs_quarantined
CREATE INDEX runs_quarantined ON perdure.runs USING btree (status, workflow);

-- index runs_runnable
CREATE INDEX runs_runnable ON perdure.runs USING btree (status, lease_until);

-- index runs_thread_queue
CREATE UNIQUE INDEX runs_thread_queue ON perdure.runs USING btree (tenant_id, thread_id, thread_seq);

-- index sessions_by_tenant
CREATE INDEX sessions_by_tenant ON perdure.sessions USING btree (tenant_id, created_at);

-- index sessions_open_by_key
CREATE INDEX sessions_open_by_key ON perdure.sessions USING btree (key_id) WHERE (ended_at IS NULL);

-- index signals_inbox
CREATE INDEX signals_inbox ON perdure.signals USING btree (run_id, name, consumed_at, id);

-- index state_history_by_step
CREATE INDEX state_history_by_step ON perdure.state_history USING btree (run_id, step_seq);

-- index thread_inbox_pending
CREATE INDEX thread_inbox_pending ON perdure.thread_inbox USING btree (tenant_id, thread_id, delivered_at, id);

-- function notify_event
CREATE OR REPLACE FUNCTION perdure.notify_event()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    PERFORM pg_notify('perdure_events', NEW.tenant_id || '/' || NEW.run_id);
    RETURN NULL;
END
$function$;

-- function notify_stream
CREATE OR REPLACE FUNCTION perdure.notify_stream()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    PERFORM pg_notify('perdure_stream', NEW.tenant_id || '/' || NEW.message_id);
    RETURN NULL;
END
$function$;

-- function notify_work
CREATE OR REPLACE FUNCTION perdure.notify_work()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    PERFORM pg_notify('perdure_work', NEW.run_id);
    RETURN NULL;
END
$function$;

-- function refuse_change_to_finished_run
CREATE OR REPLACE FUNCTION perdure.refuse_change_to_finished_run()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    RAISE EXCEPTION 'run % is % and cannot change', OLD.run_id, OLD.status
        USING ERRCODE = 'RT001', CONSTRAINT = 'runs_terminal_is_final';
END;
$function$;

-- trigger events_notify
CREATE TRIGGER events_notify AFTER INSERT ON perdure.events FOR EACH ROW EXECUTE FUNCTION perdure.notify_event();

-- trigger runs_notify_thread_free
CREATE TRIGGER runs_notify_thread_free AFTER UPDATE OF status ON perdure.runs FOR EACH ROW WHEN ((new.status = ANY (ARRAY['SUCCEEDED'::text, 'FAILED'::text, 'CANCELLED'::text])) AND (old.status <> ALL (ARRAY['SUCCEEDED'::text, 'FAILED'::text, 'CANCELLED'::text]))) EXECUTE FUNCTION perdure.notify_work();

-- trigger runs_notify_work
CREATE TRIGGER runs_notify_work AFTER INSERT OR UPDATE OF status, owner ON perdure.runs FOR EACH ROW WHEN (new.owner IS NULL AND (new.status = ANY (ARRAY['PENDING'::text, 'RUNNING'::text, 'CANCEL_REQUESTED'::text]))) EXECUTE FUNCTION perdure.notify_work();

-- trigger runs_terminal_is_final
CREATE TRIGGER runs_terminal_is_final BEFORE UPDATE ON perdure.runs FOR EACH ROW WHEN (old.status = ANY (ARRAY['SUCCEEDED'::text, 'FAILED'::text, 'CANCELLED'::text])) EXECUTE FUNCTION perdure.refuse_change_to_finished_run();

-- trigger streams_notify
CREATE TRIGGER streams_notify AFTER INSERT OR UPDATE ON perdure.streams FOR EACH ROW EXECUTE FUNCTION perdure.notify_stream();
