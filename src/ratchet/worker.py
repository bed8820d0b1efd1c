"""The worker loop: claim runnable runs, advance them, back off when idle, drain on SIGTERM."""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType

from ratchet.errors import StoreError
from ratchet.runtime import Runtime


class Worker:
    """Claims and advances runs one at a time until asked to stop.

    Startup recovery is the same loop: runs whose lease expired (their worker died) are as
    claimable as new ones; runs quarantined as written by a newer release that this code can
    read again are put back first. When idle it polls with backoff from ``poll_interval`` up to
    ``max_poll_interval`` seconds; a database error is reported to ``on_error`` and retried with
    the same backoff, never fatal. On SIGTERM or SIGINT (see :meth:`install_signal_handlers`) it
    stops claiming, lets the current step finish and commit, releases the lease and returns.
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        poll_interval: float = 0.2,
        max_poll_interval: float = 2.0,
        on_stop: Callable[[str, str], None] | None = None,
        on_error: Callable[[StoreError], None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.poll_interval = poll_interval
        self.max_poll_interval = max_poll_interval
        self.on_stop = on_stop
        self.on_error = on_error

    def install_signal_handlers(self) -> None:
        """Make SIGTERM and SIGINT request a graceful drain (main thread only)."""

        def handler(signum: int, frame: FrameType | None) -> None:
            self.stop()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def stop(self) -> None:
        """Ask the loop to drain: finish the current step, release the lease, return."""
        self.runtime.shutdown.set()

    def run(self, *, until_idle: bool = False) -> int:
        """Loop until stopped (or, with ``until_idle``, until nothing is claimable); return the
        number of run executions performed."""
        shutdown = self.runtime.shutdown
        delay = self.poll_interval
        count = 0
        self.runtime.recover_readable()
        while not shutdown.is_set():
            try:
                stopped = self.runtime.advance_one()
            except StoreError as exc:
                # The database is unreachable or locked: never die, back off and try again.
                if self.on_error is not None:
                    self.on_error(exc)
                shutdown.wait(delay)
                delay = min(delay * 2, self.max_poll_interval)
                continue
            if stopped is not None:
                count += 1
                delay = self.poll_interval
                if self.on_stop is not None:
                    self.on_stop(stopped.run_id, stopped.reason)
                continue
            if until_idle:
                break
            shutdown.wait(delay)
            delay = min(delay * 2, self.max_poll_interval)
        return count
