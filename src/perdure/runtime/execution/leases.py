"""Keeping leases alive: one heartbeat thread per runtime renews every lease it holds."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from dataclasses import dataclass, field
from datetime import timedelta

from perdure.core.clock import Clock
from perdure.core.errors import PerdureError
from perdure.store.base import Store


@dataclass(slots=True)
class Lease:
    """A held lease. ``lost`` is set when a renewal found the lease taken by someone else."""

    tenant_id: str
    run_id: str
    fence: int
    lost: threading.Event = field(default_factory=threading.Event)


class Heartbeat:
    """Renews held leases every ``lease_seconds / 3`` on a daemon thread (started on demand), all
    of them in one store transaction.

    A renewal that fails with :class:`LeaseLostError` marks the lease lost; the execution sees it
    at its next boundary, and its commit would be refused by the fence anyway.
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

    def hold(self, tenant_id: str, run_id: str, fence: int) -> Lease:
        """Start renewing a lease the caller just claimed."""
        lease = Lease(tenant_id, run_id, fence)
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
        this; tests may call it directly)."""
        held = self.held()
        if self._concurrency is not None:
            host, _, pid = self.owner.rpartition(":")
            # an unreachable database is reported by the lease renewals below too
            with contextlib.suppress(PerdureError):
                self.store.worker_beat(
                    self.owner,
                    host=host or socket.gethostname(),
                    pid=int(pid) if pid.isdigit() else os.getpid(),
                    concurrency=self._concurrency,
                    runs_held=len(held),
                    now=self.clock.now(),
                    beat_seconds=self.interval,
                )
        if not held:
            return
        refs = [(lease.tenant_id, lease.run_id, lease.fence) for lease in held]
        try:
            lost = set(self.store.renew_leases(self.owner, refs, self.clock.now() + self.lease))
        except PerdureError:
            return  # the database is unreachable: try again at the next beat
        for lease in held:
            if (lease.tenant_id, lease.run_id, lease.fence) in lost:
                lease.lost.set()
                self.drop(lease)

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
