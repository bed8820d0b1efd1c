-- Live workers (for `perdure workers`): each one beats here while it runs. A run that becomes
-- claimable (new, released, woken) notifies idle workers on channel perdure_work; the payload
-- is only the run id, and workers always re-read the store.

CREATE TABLE perdure.workers (
    owner       text PRIMARY KEY,
    host        text NOT NULL,
    pid         integer NOT NULL,
    concurrency integer NOT NULL,
    runs_held   integer NOT NULL,
    started_at  timestamptz NOT NULL,
    last_beat   timestamptz NOT NULL,
    stopped_at  timestamptz
);

CREATE INDEX runs_by_wake ON perdure.runs (wake_at);

CREATE FUNCTION perdure.notify_work() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('perdure_work', NEW.run_id);
    RETURN NULL;
END
$$;

CREATE TRIGGER runs_notify_work
AFTER INSERT OR UPDATE OF status, owner ON perdure.runs
FOR EACH ROW
WHEN (NEW.owner IS NULL AND NEW.status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED'))
EXECUTE FUNCTION perdure.notify_work();
