-- Live workers (for `ratchet workers`): each one beats here while it runs. A run that becomes
-- claimable (new, released, woken) notifies idle workers on channel ratchet_work; the payload
-- is only the run id, and workers always re-read the store.

CREATE TABLE ratchet.workers (
    owner       text PRIMARY KEY,
    host        text NOT NULL,
    pid         integer NOT NULL,
    concurrency integer NOT NULL,
    runs_held   integer NOT NULL,
    started_at  timestamptz NOT NULL,
    last_beat   timestamptz NOT NULL,
    stopped_at  timestamptz
);

CREATE INDEX runs_by_wake ON ratchet.runs (wake_at);

CREATE FUNCTION ratchet.notify_work() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ratchet_work', NEW.run_id);
    RETURN NULL;
END
$$;

CREATE TRIGGER runs_notify_work
AFTER INSERT OR UPDATE OF status, owner ON ratchet.runs
FOR EACH ROW
WHEN (NEW.owner IS NULL AND NEW.status IN ('PENDING', 'RUNNING', 'CANCEL_REQUESTED'))
EXECUTE FUNCTION ratchet.notify_work();
