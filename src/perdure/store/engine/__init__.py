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
* :mod:`~perdure.store.engine.tx`: what they share inside one transaction.
"""

from __future__ import annotations

from perdure.store.driver import Driver
from perdure.store.engine import (
    children,
    commits,
    effects,
    fleet,
    runs,
    streams,
    threads,
    versions,
    waits,
)


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

    # -- effects ----------------------------------------------------------------------------------
    plan_effect = effects.plan_effect
    get_effect = effects.get_effect
    update_effect = effects.update_effect
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

    # ChildrenStore
    child_runs = children.child_runs

    def wait_for_work(self, timeout: float) -> bool:
        """See :meth:`Store.wait_for_work`: the driver listens, or returns False at once."""
        return self.driver.wait_for_work(timeout)

    def close(self) -> None:
        """See :meth:`Store.close`."""
        self.driver.close()
