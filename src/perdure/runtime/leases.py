"""Keeping leases alive: one heartbeat thread per runtime renews every lease it holds."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from perdure.core.clock import Clock
from perdure.core.errors import PerdureError
from perdure.core.model import MISSED_BEATS
from perdure.store.base import Store


@dataclass(slots=True)
class Lease:
    """A held lease. ``lost`` is set when a renewal found the lease taken by someone else.
    ``until``: the expiry the last claim or renewal of it wrote (None: not known)."""

    tenant_id: str
    run_id: str
    fence: int
    until: datetime | None = None
    lost: threading.Event = field(default_factory=threading.Event)


class Heartbeat:
    """Renews held leases every ``lease_seconds / 3`` on a daemon thread (started on demand), all
    of them in one store transaction.

    A renewal that fails with :class:`LeaseLostError` marks the lease lost; the execution sees it
    at its next boundary, and its commit would be refused by the fence anyway.

    :meth:`holds` tells, from what the beats last wrote and without a round trip, whether no
    other worker can have taken a lease over yet: asked just before an effect's call, which no
    fence can stop once sent (see ``docs/recovery.md``, "A worker that was paused").
    """

    def __init__(self, store: Store, clock: Clock, owner: str, lease_seconds: float) -> None:
        self.store = store
        self.clock = clock
        self.owner = owner
        self.lease = timedelta(seconds=lease_seconds)
        self.interval = lease_seconds / 3
        self._held: dict[str, Lease] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._concurrency: int | None = None
        self._beaten: datetime | None = None
        """The time the last worker beat that landed was sent (a registered worker)."""

    def register_worker(self, concurrency: int) -> None:
        """Report this process in the workers table at every beat (``perdure workers``)."""
        self._concurrency = concurrency
        self.beat()
        self._start()

    def unregister_worker(self) -> None:
        """Report that this worker drained and left."""
        if self._concurrency is not None:
            self._concurrency = None
            with contextlib.suppress(PerdureError):
                self.store.worker_stopped(self.owner, self.clock.now())

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="perdure-heartbeat", daemon=True
                )
                self._thread.start()

    def hold(self, tenant_id: str, run_id: str, fence: int, until: datetime | None = None) -> Lease:
        """Start renewing a lease the caller just claimed (``until``: the expiry its claim
        wrote)."""
        lease = Lease(tenant_id, run_id, fence, until)
        with self._lock:
            self._held[run_id] = lease
        self._start()
        return lease

    def drop(self, lease: Lease) -> None:
        """Stop renewing a lease (the run stopped, ended or was released)."""
        with self._lock:
            if self._held.get(lease.run_id) is lease:
                del self._held[lease.run_id]

    def held(self) -> list[Lease]:
        """The leases currently renewed."""
        with self._lock:
            return list(self._held.values())

    def beat(self) -> None:
        """Renew every held lease once, and report the worker when registered (the loop calls
        this; tests may call it directly). A registered worker that was silent long enough for
        the fleet to count it dead gives up the leases it held across the silence: another
        worker may be taking them over on what it read while this one was dead, whatever this
        renewal writes."""
        held = self.held()
        sent = self.clock.now()
        if self._concurrency is not None:
            if self._beaten is not None and sent > self._beaten + self._dead_after:
                for lease in held:
                    lease.lost.set()
                    self.drop(lease)
                held = []
            host, _, pid = self.owner.rpartition(":")
            try:
                self.store.worker_beat(
                    self.owner,
                    host=host or socket.gethostname(),
                    pid=int(pid) if pid.isdigit() else os.getpid(),
                    concurrency=self._concurrency,
                    runs_held=len(held),
                    now=sent,
                    beat_seconds=self.interval,
                )
                self._beaten = sent
            except PerdureError:
                pass  # an unreachable database is reported by the lease renewals below too
        if not held:
            return
        refs = [(lease.tenant_id, lease.run_id, lease.fence) for lease in held]
        until = sent + self.lease
        try:
            lost = set(self.store.renew_leases(self.owner, refs, until))
        except PerdureError:
            return  # the database is unreachable: try again at the next beat
        for lease in held:
            if (lease.tenant_id, lease.run_id, lease.fence) in lost:
                lease.lost.set()
                self.drop(lease)
            else:
                lease.until = until

    @property
    def _dead_after(self) -> timedelta:
        """How long the fleet waits for this worker's beat before counting it dead."""
        return timedelta(seconds=MISSED_BEATS * self.interval)

    def holds(self, lease: Lease) -> bool:
        """True when no other worker can have taken ``lease`` over yet, with a margin of half
        a beat interval: its expiry has not come, and (a registered worker) the fleet cannot
        count this worker dead. Read from what the last claim and beats wrote, by the clock:
        a worker that was paused or cut off from the database for a third of its lease finds
        it false, before any renewal could tell it so. False too when the lease is lost."""
        if lease.lost.is_set():
            return False
        limit = self.clock.now() + timedelta(seconds=self.interval / 2)
        if lease.until is not None and limit >= lease.until:
            return False
        beaten = self._beaten
        return self._concurrency is None or beaten is None or limit < beaten + self._dead_after

    def overdue(self) -> bool:
        """True when this registered worker's last beat that landed (by the runtime's clock) is
        older than :data:`~perdure.core.model.MISSED_BEATS` less one of its intervals: it was
        frozen or cut off, and the fleet counts it dead, or is about to; the worker then beats
        before it claims anything (:class:`~perdure.runtime.worker.Worker`). A worker that is
        not registered is never overdue."""
        if self._concurrency is None:
            return False
        beaten = self._beaten
        if beaten is None:
            return True
        late = (self.clock.now() - beaten).total_seconds()
        return late >= (MISSED_BEATS - 1) * self.interval

    def stop(self) -> None:
        """Stop the thread (held leases simply expire or are released by their owners)."""
        self._stopped.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stopped.is_set():
            self._wake.wait(self.interval)
            if self._stopped.is_set():
                return
            self.beat()


def process_owner() -> str:
    """The owner name of this process in leases: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def is_dead_local_owner(owner: str | None) -> bool:
    """True when ``owner`` is a process of this host (``host:pid``) that no longer exists.

    Such a lease can be taken over at once instead of waiting for it to expire. Being wrong
    here is harmless for correctness: the takeover raises the fence, so the old owner's writes
    would be refused anyway.
    """
    if not owner:
        return False
    host, _, pid_text = owner.rpartition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
