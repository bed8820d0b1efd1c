"""The worker: one claim loop, N runs in flight in one process, a heartbeat, wake-ups, and a
drain on SIGTERM."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from types import FrameType

from perdure.core.errors import ConfigError, PerdureError, StoreError
from perdure.core.history import Retention
from perdure.core.model import Run
from perdure.runtime.runtime import Runtime
from perdure.runtime.settings import setting

MAX_CONCURRENCY = 10_000
"""The most runs one worker process holds at once."""


class Worker:
    """Claims and advances runs, up to ``concurrency`` at a time.

    One dispatcher thread claims runs while fewer than ``concurrency`` are in flight and hands
    each to a pool of ``concurrency`` execution threads (each run keeps its lease and its
    thread until it stops). ``async def`` steps of all of them run together on the runtime's
    event loop, so one process holds hundreds of runs that wait on models or tools.

    Startup recovery is the same loop: runs whose lease expired (their worker died) are as
    claimable as new ones; runs quarantined as written by a newer release that this code can
    read again are put back first. When idle, the dispatcher waits with backoff from
    ``poll_interval`` to ``max_poll_interval`` seconds, never past the next due timer or retry,
    and wakes early when the store notifies that work is ready (PostgreSQL LISTEN/NOTIFY). A
    database error is reported to ``on_error`` and retried with the same backoff, never fatal;
    so is anything unexpected that escapes one run's execution (the run's lease then expires and
    any worker continues it from its last committed step).
    On SIGTERM or SIGINT (see :meth:`install_signal_handlers`) the dispatcher stops claiming;
    every run in flight lets its current step finish and commit, and releases its lease; then
    :meth:`run` returns.
    Each wait reads the runtime's clock afresh, so a test clock moved by another process (see
    :mod:`perdure.runtime.clock`) is honoured within ``max_poll_interval`` seconds.
    The process reports itself in the workers table while it runs (``perdure workers``); a worker
    that missed its beats (it was frozen: the fleet counts it dead) beats before it claims again,
    so no run it claims is taken over at once as a dead worker's.
    With ``gc_every`` (seconds), an idle dispatcher runs :meth:`Runtime.retention.gc` under
    ``retention`` at most that often (by the runtime's clock); what it did goes to
    ``on_gc``, and an error to ``on_error``. ``on_stop`` hears each execution's run id and why it
    stopped, with the final status when the run ended (``ended SUCCEEDED``, ``ended FAILED``).
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        concurrency: int = 1,
        poll_interval: float = 0.2,
        max_poll_interval: float = 2.0,
        on_stop: Callable[[str, str], None] | None = None,
        on_error: Callable[[PerdureError], None] | None = None,
        on_drain: Callable[[], None] | None = None,
        gc_every: float | None = None,
        retention: Retention | None = None,
        on_gc: Callable[[str], None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.concurrency = int(setting("concurrency", concurrency, 1, MAX_CONCURRENCY, "runs"))
        if self.concurrency != concurrency:
            raise ConfigError(f"concurrency {concurrency!r} is not a whole number of runs")
        self.poll_interval = setting("poll_interval", poll_interval, 0.01, 60)
        self.max_poll_interval = setting(
            "max_poll_interval", max_poll_interval, self.poll_interval, 3600
        )
        self.on_stop = on_stop
        self.on_error = on_error
        self.on_drain = on_drain
        self.gc_every = None if gc_every is None else setting("gc_every", gc_every, 1, 10**7)
        self.retention = retention or Retention()
        self.on_gc = on_gc
        self._next_gc: datetime | None = None
        self._work = threading.Event()
        self._count = 0
        self._in_flight = 0
        self._slots = threading.Condition()

    def install_signal_handlers(self) -> None:
        """Make SIGTERM and SIGINT request a graceful drain (main thread only)."""

        def handler(signum: int, frame: FrameType | None) -> None:
            self.stop()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def stop(self) -> None:
        """Ask the worker to drain: claim nothing more; every run in flight finishes its current
        step, commits it and releases its lease; then :meth:`run` returns. ``on_drain`` is told
        once the request is registered."""
        self.runtime.services.shutdown.set()
        self._work.set()
        if self.on_drain is not None:
            self.on_drain()

    def run(self, *, until_idle: bool = False) -> int:
        """Run until stopped (or, with ``until_idle``, until nothing is claimable and nothing is
        in flight); return the number of run executions performed."""
        rt = self.runtime
        rt.versions.recover_readable()
        rt.services.heartbeat.register_worker(self.concurrency)
        listener = None
        if rt.store.notifies and not until_idle:
            listener = threading.Thread(target=self._listen, name="perdure-listen", daemon=True)
            listener.start()
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="perdure-run")
        dispatcher = threading.Thread(
            target=self._dispatch, args=(pool, until_idle), name="perdure-dispatch"
        )
        dispatcher.start()
        try:
            while dispatcher.is_alive():
                dispatcher.join(timeout=0.2)  # the main thread stays free for signal handlers
        finally:
            pool.shutdown(wait=True)
            rt.services.heartbeat.unregister_worker()
        return self._count

    def _dispatch(self, pool: ThreadPoolExecutor, until_idle: bool) -> None:
        """The one claim loop: claim while a slot is free, hand each run to the pool."""
        rt = self.runtime
        delay = self.poll_interval
        while not rt.services.shutdown.is_set():
            with self._slots:
                while self._in_flight >= self.concurrency and not rt.services.shutdown.is_set():
                    self._slots.wait(1.0)
            if rt.services.shutdown.is_set():
                break
            missed = self._missed_beats()
            try:
                run = None if missed else rt.claim_next()
            except StoreError as exc:
                if self.on_error is not None:
                    self.on_error(exc)
                missed = True
            if missed:  # the beat or the claim failed: claim nothing yet, back off
                rt.services.shutdown.wait(delay)
                delay = min(delay * 2, self.max_poll_interval)
                continue
            if run is not None:
                delay = self.poll_interval
                with self._slots:
                    self._in_flight += 1
                pool.submit(self._advance, run)
                continue
            self._collect()
            with self._slots:
                busy = self._in_flight
            if until_idle:
                if busy == 0:
                    break
                with self._slots:  # a run in flight may leave work behind: look again after it
                    self._slots.wait(1.0)
                continue
            self._idle(delay)
            delay = min(delay * 2, self.max_poll_interval)
        with self._slots:  # drain: every claimed run finishes its step and lets go
            while self._in_flight:
                self._slots.wait(1.0)

    def _missed_beats(self) -> bool:
        """Beat first if this worker missed its beats (it was frozen: the fleet may count it dead,
        and would take over at once any run it claimed now); True when the beat failed."""
        heartbeat = self.runtime.services.heartbeat
        if heartbeat.overdue():
            heartbeat.beat()  # also learns which leases were lost meanwhile
        return heartbeat.overdue()

    def _advance(self, run: Run) -> None:
        try:
            stopped = self.runtime.advance_claimed(run)
            with self._slots:
                self._count += 1
            if self.on_stop is not None:
                self.on_stop(stopped.run_id, stopped.describe())
        except Exception as exc:  # a pool thread must report, never vanish silently
            if self.on_error is not None:
                error = (
                    exc
                    if isinstance(exc, PerdureError)
                    else PerdureError(
                        f"run {run.run_id} stopped on an unexpected {type(exc).__name__}: {exc}"
                    )
                )
                self.on_error(error)
        finally:
            with self._slots:
                self._in_flight -= 1
                self._slots.notify_all()
            self._work.set()  # a slot is free: an idle dispatcher looks for work again

    def _collect(self) -> None:
        """Garbage-collect when ``gc_every`` says it is time (only between claims, when idle)."""
        if self.gc_every is None:
            return
        now = self.runtime.clock.now()
        if self._next_gc is not None and now < self._next_gc:
            return
        self._next_gc = now + timedelta(seconds=self.gc_every)
        try:
            report = self.runtime.retention.gc(self.retention)
        except PerdureError as exc:
            if self.on_error is not None:
                self.on_error(exc)
            return
        if self.on_gc is not None:
            self.on_gc(
                f"gc: {report.runs} runs, {report.orphan_uploads} orphaned uploads, "
                f"{report.objects_deleted} objects"
            )

    def _idle(self, delay: float) -> None:
        """Wait for work: until notified, the backoff delay, or the next due timer."""
        rt = self.runtime
        try:
            due = rt.store.next_wake(rt.clock.now())
        except StoreError:
            due = None
        if due is not None:
            delay = max(0.0, min(delay, (due - rt.clock.now()).total_seconds()))
        if self._work.wait(delay):
            self._work.clear()

    def _listen(self) -> None:
        """Turn store notifications into wake-ups of idle loops."""
        rt = self.runtime
        while not rt.services.shutdown.is_set():
            if rt.store.wait_for_work(1.0):
                self._work.set()
