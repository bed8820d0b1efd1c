"""Which workers are alive: the workers table read with each worker's own beat interval, and
pid liveness for workers of this host.

A worker is ``dead`` when it is a process of this host that no longer exists, or when it missed
:data:`~perdure.core.model.MISSED_BEATS` of its beats. A dead worker's runs are claimable at once
(see :meth:`Fleet.dead_owners`), before their leases run out. Being wrong costs nothing in
correctness: a worker that was only paused finds, at its next write, that the fence moved on.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import datetime, timedelta

from perdure.core.clock import Clock
from perdure.core.errors import StoreError
from perdure.core.model import WorkerInfo, WorkerState
from perdure.runtime.leases import is_dead_local_owner
from perdure.store.base import Store

REFRESH_SECONDS = 1.0
"""How long the list of dead owners is reused before the workers table is read again: until the
runtime's clock or the process's monotonic clock moved this far (a cache of the table)."""


class Fleet:
    """The workers of one database as this process sees them."""

    def __init__(self, store: Store, clock: Clock, owner: str) -> None:
        self.store = store
        self.clock = clock
        self.owner = owner
        self._lock = threading.Lock()
        self._dead: tuple[float, datetime, list[str]] | None = None

    def workers(self) -> list[WorkerInfo]:
        """Workers of this database, live or dead, and those that left in the last hour, each
        with its :class:`~perdure.core.model.WorkerState`."""
        now = self.clock.now()
        found = self.store.workers(now - timedelta(hours=1))
        return [replace(w, state=self.state_of(w)) for w in found]

    def state_of(self, w: WorkerInfo) -> WorkerState:
        """``stopped``, ``dead`` (its process is gone, or it missed its beats) or ``live``."""
        if w.stopped_at is not None:
            return WorkerState.STOPPED
        if w.owner != self.owner and (
            is_dead_local_owner(w.owner) or w.missed_beats(self.clock.now())
        ):
            return WorkerState.DEAD
        return WorkerState.LIVE

    def dead_owners(self) -> list[str]:
        """Owners whose leases may be taken over at once (read at most every
        :data:`REFRESH_SECONDS`; an unreachable table means none)."""
        now = self.clock.now()
        with self._lock:
            if self._dead is not None:
                read_at, read_now, dead = self._dead
                fresh = time.monotonic() - read_at < REFRESH_SECONDS
                if fresh and timedelta(0) <= now - read_now < timedelta(seconds=REFRESH_SECONDS):
                    return dead
        try:
            dead = [w.owner for w in self.workers() if w.state is WorkerState.DEAD]
        except StoreError:
            dead = []
        with self._lock:
            self._dead = (time.monotonic(), now, dead)
        return dead
