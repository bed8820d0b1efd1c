"""Step-boundary commits under the three durability modes (see :class:`Durability`) and the
checkpoint strategies (:mod:`perdure.core.strategies`).

Under ``sync`` (the default) a boundary is flushed when the workflow's strategy for its step
says so (``per_step``, the default, flushes every boundary: today's ``sync``); ``exit`` is the
``per_effect`` strategy whatever the workflow says; ``async`` hands boundaries to a background
writer and flushes at the same points as ``per_effect``.

A :class:`Committer` belongs to one execution of one run under one fence. It is the only writer of
that run's progress while the execution lasts; the expected ``state_version`` lives in the
execution's :class:`~perdure.runtime.execution.claim.Claim`. Its commits join the runtime's
:class:`~perdure.runtime.grouping.GroupCommitter`, which may write them in one
transaction with other runs' commits.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import cast

from perdure.core.errors import PerdureError, StoreUnavailableError
from perdure.core.model import Durability, RunStatus
from perdure.core.strategies import CheckpointStrategy, per_effect, per_step
from perdure.runtime.execution.claim import Claim
from perdure.runtime.execution.group_commit import GroupCommitter
from perdure.runtime.execution.outages import RETRY_FOR, ride_out
from perdure.store.base import Boundary, Store

_STOP = object()


class Committer:
    """Commits boundaries now (``sync``), in a background writer (``async``) or at the end
    of the segment (``exit``). :meth:`flush` makes everything submitted durable, or raises the
    first commit error (for example :class:`~perdure.core.errors.LeaseLostError`)."""

    def __init__(
        self,
        store: Store,
        claim: Claim,
        now: Callable[[], datetime],
        retry_for: float = RETRY_FOR,
        on_commit: Callable[[int, float], None] | None = None,
        group: GroupCommitter | None = None,
        strategy: Callable[[str], CheckpointStrategy] | None = None,
    ) -> None:
        self.on_commit = on_commit
        self._write = group.commit if group is not None else store.commit
        """Where boundaries go: the runtime's group of commits, or straight to the store."""
        """Told how many boundaries each commit carried and how long it took."""
        self.store = store
        self.claim = claim
        self.mode = claim.run.durability
        self.retry_for = retry_for
        self._now = now
        self._buffer: list[Boundary] = []
        self._queue: queue.Queue[object] | None = None
        self._writer: threading.Thread | None = None
        self._error: PerdureError | None = None
        self._strategy = (
            strategy
            if self.mode is Durability.SYNC and strategy
            else _fixed(per_step() if self.mode is Durability.SYNC else per_effect())
        )
        """The strategy of a step's boundaries and effects (see the module docstring)."""
        self._flushed_at = now()
        """When boundaries were last flushed (by the runtime's clock), for the timed ones."""
        self._side_effect = False
        """The step being run made (or replayed) a side-effecting effect."""

    def submit(self, boundary: Boundary) -> bool:
        """Hand one boundary over; True when it is durable as this returns. A boundary that
        continues to a next step is flushed when its step's strategy says so (``per_step``:
        always); one that waits or ends the run is flushed at once, whatever the strategy."""
        self._raise_pending()
        side_effect, self._side_effect = self._side_effect, False
        if self.mode is Durability.ASYNC:
            self._async_queue().put(boundary)
            return False
        self._buffer.append(boundary)
        # the boundary was made just now: its end is the clock's reading (no second one)
        elapsed = (boundary.finished_at - self._flushed_at).total_seconds()
        strategy = self._strategy(boundary.step)
        if boundary.status is not RunStatus.RUNNING or strategy.flush_after_boundary(
            side_effect=side_effect, elapsed=elapsed
        ):
            self.flush()
            return True
        return False

    def side_effect_made(self) -> None:
        """The running step made (or replayed) a side-effecting effect (``hybrid`` flushes
        its boundary at once)."""
        self._side_effect = True

    def before_effect(self, step: str, *, model: bool) -> None:
        """An effect of ``step`` is about to be called (or replayed): flush what its
        strategy says must be durable first (every boundary, before a side effect)."""
        if self.flushes_before(step, model=model):
            self.flush()

    def flushes_before(self, step: str, *, model: bool) -> bool:
        """Whether every boundary before an effect of ``step`` is durable before its call (always
        for a side effect; for a model call by the step's strategy)."""
        strategy = self._strategy(step)
        return self.mode is Durability.ASYNC or strategy.flush_before_effect(model=model)

    def flush(self) -> None:
        """Make every submitted boundary durable before returning (waits, ends, shutdown)."""
        if self._queue is not None and self._writer is not None:
            self._queue.put(_STOP)
            self._writer.join()
            self._queue = None
            self._writer = None
        self._raise_pending()
        if self._buffer:
            batch, self._buffer = self._buffer, []
            self._commit(batch)
            self._flushed_at = self._at(batch)

    def discard(self) -> None:
        """Drop what is not yet durable (the run was lost or closed under us)."""
        self._buffer.clear()
        if self._queue is not None and self._writer is not None:
            self._queue.put(_STOP)
            self._writer.join()
            self._queue = None
            self._writer = None
        self._error = None

    def _commit(self, batch: list[Boundary]) -> None:
        """Commit, riding out a database outage (:func:`ride_out`): the same commit (same
        fence, same expected version) is retried for up to ``retry_for`` seconds, and a retry
        first checks whether the lost attempt landed, so a boundary is never committed twice.
        The first try is made directly (no closures made for a commit that lands at once)."""
        try:
            self._write_once(batch)
        except StoreUnavailableError as first:
            ride_out(
                self._what,
                lambda: self._write_once(batch),
                lambda: self._landed(len(batch)) or None,
                self.retry_for,
                failed=first,
            )

    def _at(self, batch: list[Boundary]) -> datetime:
        """The time a commit of ``batch`` is made at: under ``sync`` and ``exit``, the end of
        its last step (read by the runtime's clock as its boundary was made, just before); the
        background writer of ``async`` reads the clock."""
        return self._now() if self.mode is Durability.ASYNC else batch[-1].finished_at

    def _write_once(self, batch: list[Boundary]) -> bool:
        c = self.claim
        started = time.perf_counter()
        version = self._write(c.tenant_id, c.run_id, c.fence, c.version, batch, self._at(batch))
        c.committed(version, len(batch))
        if self.on_commit is not None:
            self.on_commit(len(batch), time.perf_counter() - started)
        return True

    def _what(self) -> str:
        return f"a step boundary of run {self.claim.run_id}"

    def _landed(self, steps: int) -> bool:
        """True when a commit whose answer was lost did land (our fence, one version more,
        our steps counted)."""
        c = self.claim
        run = self.store.get_run(c.tenant_id, c.run_id)
        landed = (
            run.fence == c.fence
            and run.state_version == c.version + 1
            and run.steps_done == c.steps_done + steps
        )
        if landed:
            c.committed(run.state_version, steps)
        return landed

    def _raise_pending(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _async_queue(self) -> queue.Queue[object]:
        if self._queue is None:
            self._queue = queue.Queue()
            self._writer = threading.Thread(
                target=self._write_loop, args=(self._queue,), name="perdure-writer", daemon=True
            )
            self._writer.start()
        return self._queue

    def _write_loop(self, q: queue.Queue[object]) -> None:
        """Coalesce whatever is queued into one transaction, until told to stop."""
        stopping = False
        while not stopping:
            batch: list[Boundary] = []
            item = q.get()
            while True:
                if item is _STOP:
                    stopping = True
                    break
                batch.append(cast(Boundary, item))
                try:
                    item = q.get_nowait()
                except queue.Empty:
                    break
            if batch and self._error is None:
                try:
                    self._commit(batch)
                except PerdureError as exc:
                    self._error = exc


def _fixed(strategy: CheckpointStrategy) -> Callable[[str], CheckpointStrategy]:
    return lambda _step: strategy
