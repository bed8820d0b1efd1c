"""The one write path: every :class:`~perdure.store.base.Store` method, written once for every
database.

:class:`Engine` holds a :class:`~perdure.store.driver.Driver` and speaks to the database only
through it: named queries of the dialect's ``sql/queries.sql`` inside the driver's
transactions, times and lists in the driver's form, rows mapped by
:mod:`perdure.store.rows`. The guards, the batching, the events and every decision are here, so
SQLite and PostgreSQL cannot drift apart; a driver adds only what its database needs.

The methods are written by capability, each in a module of this package, as functions whose
first parameter is the engine (``self``), and named in the class body below:

* :mod:`~perdure.store.engine.runs`: runs, leases, status changes, retries, history reads;
* :mod:`~perdure.store.engine.commits`: the step-boundary commit;
* :mod:`~perdure.store.engine.effects`: the effect ledger;
* :mod:`~perdure.store.engine.waits`: approvals, signals, resumes, requests;
* :mod:`~perdure.store.engine.versions`: migrations and upgrades of stored runs;
* :mod:`~perdure.store.engine.fleet`: workers, the watchdog, timers;
* :mod:`~perdure.store.engine.threads`: one writer per thread, thread policies, the inbox;
* :mod:`~perdure.store.engine.streams`: durable token streams;
* :mod:`~perdure.store.engine.checkpoints`: LangGraph threads' checkpoints, blobs and writes;
* :mod:`~perdure.store.engine.access`: API keys, event feeds, operator counts;
* :mod:`~perdure.store.engine.history`: state history, savepoints, fork lineage;
* :mod:`~perdure.store.engine.artifacts`: artifact references;
* :mod:`~perdure.store.engine.retention`: deleting finished runs, erasing threads;
* :mod:`~perdure.store.engine.archive`: a run's rows out and back in (cold tier);
* :mod:`~perdure.store.engine.tx`: what they share inside one transaction.
"""

from __future__ import annotations

from perdure.store.driver import Driver
from perdure.store.engine import (
    access,
    archive,
    checkpoints,
    children,
    commits,
    effects,
    fleet,
    history,
    retention,
    runs,
    streams,
    threads,
    versions,
    waits,
)
from perdure.store.engine import artifacts as artifact_refs


class Engine:
    """:class:`~perdure.store.base.Store` on any database a :class:`Driver` reaches."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        """The database's connections, transactions and conventions."""
        self.url = driver.url
        """The database URL the store was opened with."""
        self.notifies = driver.notifies
        """True when :meth:`wait_for_work` really waits for notifications."""

    # -- the schema and versions ------------------------------------------------------------------
    migrate = versions.migrate
    schema_version = versions.schema_version
    upgrade_run = versions.upgrade_run
    scan_runs = versions.scan_runs
    requeue_too_new = versions.requeue_too_new

    # -- runs, leases and history -----------------------------------------------------------------
    create_run = runs.create_run
    get_run = runs.get_run
    list_runs = runs.list_runs
    load_state = runs.load_state
    claim = runs.claim
    heartbeat = runs.heartbeat
    renew_leases = runs.renew_leases
    release = runs.release
    set_status = runs.set_status
    defer = runs.defer
    steps = runs.steps
    events = runs.events
    messages = runs.messages

    # -- the step-boundary commit -----------------------------------------------------------------
    commit = commits.commit
    commit_many = commits.commit_many

    # -- effects ----------------------------------------------------------------------------------
    plan_effect = effects.plan_effect
    plan_effects = effects.plan_effects
    get_effect = effects.get_effect
    update_effect = effects.update_effect
    move_effects = effects.move_effects
    list_effects = effects.list_effects

    # -- waits, people and requests ---------------------------------------------------------------
    approvals = waits.approvals
    decide_approval = waits.decide_approval
    deliver_signal = waits.deliver_signal
    signals = waits.signals
    reopen = waits.reopen
    record_event = waits.record_event
    recall_request = waits.recall_request
    remember_request = waits.remember_request
    delete_run_messages = waits.delete_run_messages

    # -- the fleet --------------------------------------------------------------------------------
    worker_beat = fleet.worker_beat
    worker_stopped = fleet.worker_stopped
    workers = fleet.workers
    stuck_runs = fleet.stuck_runs
    next_wake = fleet.next_wake

    # -- threads and streams ----------------------------------------------------------------------
    set_thread_policy = threads.set_thread_policy
    thread = threads.thread
    post_message = threads.post_message
    open_stream = streams.open_stream
    write_stream = streams.write_stream
    stream_entries = streams.stream_entries
    stream_info = streams.stream_info
    watch_streams = streams.watch_streams
    # -- graph checkpoints (perdure.langgraph) ---------------------------------------------------
    graph_thread = checkpoints.graph_thread
    open_graph_thread = checkpoints.open_graph_thread
    put_graph_checkpoint = checkpoints.put_graph_checkpoint
    put_graph_writes = checkpoints.put_graph_writes
    get_graph_checkpoint = checkpoints.get_graph_checkpoint
    list_graph_checkpoints = checkpoints.list_graph_checkpoints
    delete_graph_thread = checkpoints.delete_graph_thread
    delete_graph_runs = checkpoints.delete_graph_runs
    copy_graph_thread = checkpoints.copy_graph_thread
    prune_graph_threads = checkpoints.prune_graph_threads
    # -- keys, event feeds and counts -------------------------------------------------------------
    create_key = access.create_key
    find_key = access.find_key
    list_keys = access.list_keys
    revoke_key = access.revoke_key
    tenant_events = access.tenant_events
    events_since = access.events_since
    last_event_seq = access.last_event_seq
    run_counts = access.run_counts
    effect_counts = access.effect_counts
    spend_counts = access.spend_counts
    queue = access.queue
    wait_for_events = access.wait_for_events
    # -- history, savepoints and forks ------------------------------------------------------------
    state_changes = history.state_changes
    state_at = history.state_at
    add_savepoint = history.add_savepoint
    savepoints = history.savepoints
    lineage = history.lineage
    messages_until = history.messages_until

    # -- artifacts --------------------------------------------------------------------------------
    record_artifact = artifact_refs.record_artifact
    artifacts = artifact_refs.artifacts
    orphan_uploads = artifact_refs.orphan_uploads
    drop_artifacts = artifact_refs.drop_artifacts
    referenced = artifact_refs.referenced

    # -- retention and erasure --------------------------------------------------------------------
    expired_runs = retention.expired_runs
    delete_runs = retention.delete_runs
    prune_finished = retention.prune_finished
    erase_thread = retention.erase_thread
    erase_run = retention.erase_run

    # -- archive ----------------------------------------------------------------------------------
    export_run = archive.export_run
    import_run = archive.import_run

    # ChildrenStore
    child_runs = children.child_runs

    def wait_for_work(self, timeout: float) -> bool:
        """See :meth:`Store.wait_for_work`: the driver listens, or returns False at once."""
        return self.driver.wait_for_work(timeout)

    def close(self) -> None:
        """See :meth:`Store.close`."""
        self.driver.close()
