"""The worker: N claim loops in one process, a heartbeat, wake-ups, and a drain on SIGTERM."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType

from perdure.core.errors import StoreError
from perdure.runtime.runtime import Runtime


class Worker:
    """Claims and advances runs, ``concurrency`` at a time (one thread and one lease each).

    Startup recovery is the same loop: runs whose lease expired (their worker died) are as
    claimable as new ones; runs quarantined as written by a newer release that this code can
    read again are put back first. When idle, a thread waits with backoff from
    ``poll_interval`` to ``max_poll_interval`` seconds, never past the next due timer or retry,
    and wakes early when the store notifies that work is ready (PostgreSQL LISTEN/NOTIFY). A
    database error is reported to ``on_error`` and retried with the same backoff, never fatal.
    Each wait reads the runtime's clock afresh, so a test clock moved by another process (see
    :mod:`perdure.runtime.clock`) is honoured within ``max_poll_interval`` seconds.
    On SIGTERM or SIGINT (see :meth:`install_signal_handlers`) every thread stops claiming,
    lets its current step finish and commit, and releases its lease; then :meth:`run` returns.
    The process reports itself in the workers table while it runs (``perdure workers``).
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        concurrency: int = 1,
        poll_interval: float = 0.2,
        max_poll_interval: float = 2.0,
        on_stop: Callable[[str, str], None] | None = None,
        on_error: Callable[[StoreError], None] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self.runtime = runtime
        self.concurrency = concurrency
        self.poll_interval = poll_interval
        self.max_poll_interval = max_poll_interval
        self.on_stop = on_stop
        self.on_error = on_error
        self._work = threading.Event()
        self._count = 0
        self._lock = threading.Lock()

    def install_signal_handlers(self) -> None:
        """Make SIGTERM and SIGINT request a graceful drain (main thread only)."""

        def handler(signum: int, frame: FrameType | None) -> None:
            self.stop()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def stop(self) -> None:
        """Ask every loop to drain: finish the current step, release the lease, return."""
        self.runtime.shutdown.set()
        self._work.set()

    def run(self, *, until_idle: bool = False) -> int:
        """Run until stopped (or, with ``until_idle``, until nothing is claimable); return the
        number of run executions performed."""
        rt = self.runtime
        rt.recover_readable()
        rt.heartbeat.register_worker(self.concurrency)
        listener = None
        if rt.store.notifies and not until_idle:
            listener = threading.Thread(target=self._listen, name="perdure-listen", daemon=True)
            listener.start()
        loops = [
            threading.Thread(target=self._loop, args=(until_idle,), name=f"perdure-worker-{i}")
            for i in range(self.concurrency)
        ]
        for t in loops:
            t.start()
        try:
            while any(t.is_alive() for t in loops):
                for t in loops:
                    t.join(timeout=0.2)  # the main thread stays free for signal handlers
        finally:
            rt.heartbeat.unregister_worker()
        return self._count

    def _loop(self, until_idle: bool) -> None:
        rt = self.runtime
        delay = self.poll_interval
        while not rt.shutdown.is_set():
            try:
                stopped = rt.advance_one()
            except StoreError as exc:
                if self.on_error is not None:
                    self.on_error(exc)
                rt.shutdown.wait(delay)
                delay = min(delay * 2, self.max_poll_interval)
                continue
            if stopped is not None:
                with self._lock:
                    self._count += 1
                delay = self.poll_interval
                if self.on_stop is not None:
                    self.on_stop(stopped.run_id, stopped.reason)
                continue
            if until_idle:
                return
            self._idle(delay)
            delay = min(delay * 2, self.max_poll_interval)

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
        while not rt.shutdown.is_set():
            if rt.store.wait_for_work(1.0):
                self._work.set()
