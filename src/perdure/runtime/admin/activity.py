"""The Runtime's part for what is happening across runs (``rt.activity``): the event feeds
that live views follow, the audit trail, the counts and the queue operators watch, the stuck
runs and the workers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from perdure.core.audit import AUDITED_TYPES, Decision, decision_of
from perdure.core.model import Event, Run, WorkerInfo
from perdure.core.observed import (
    EffectCount,
    PeriodCount,
    Queue,
    RunCount,
    SpendCount,
    StepLatency,
    latencies,
)
from perdure.runtime.admin.parts import DEFAULT_TENANT, RuntimeParts, Tenant, tenant_of
from perdure.runtime.admin.verbs import verb


class Activity:
    """Feeds, audit, counts, queue, stuck runs and workers of one store."""

    def __init__(self, parts: RuntimeParts, workers: Callable[[], list[WorkerInfo]]) -> None:
        self.parts = parts
        self.store = parts.store
        self.clock = parts.clock
        self._workers = workers

    # -- feeds ----------------------------------------------------------------------------------

    @verb
    def events(
        self, run_id: str, *, tenant: Tenant = DEFAULT_TENANT, after: int = 0, limit: int = 1000
    ) -> list[Event]:
        """The run's events with ``seq > after``, oldest first (what a live view resumes from:
        ``seq`` is the stream position)."""
        return self.parts.store.events(tenant_of(tenant), run_id, after=after, limit=limit)

    @verb
    def feed(
        self,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        after: int = 0,
        types: Sequence[str] = (),
        workflow: str | None = None,
        limit: int = 1000,
    ) -> list[Event]:
        """Events of every run of a tenant with ``seq > after``, oldest first, filtered by
        event type (any of) and workflow."""
        return self.parts.store.activity.tenant_events(
            tenant_of(tenant), after=after, types=types, workflow=workflow, limit=limit
        )

    @verb
    def audit(
        self, *, tenant: Tenant = DEFAULT_TENANT, after: int = 0, limit: int = 100
    ) -> list[Decision]:
        """The tenant's audit trail: decisions on its runs (approve, reject, resolve, resume,
        fail, cancel) with who made them and the credential they came through, oldest first,
        from event ``after`` on, at most ``limit`` (see :mod:`perdure.core.audit`)."""
        tenant_id, cursor = tenant_of(tenant), after
        found: list[Decision] = []
        while len(found) < limit:
            page = self.parts.store.activity.tenant_events(
                tenant_id, after=cursor, types=AUDITED_TYPES, limit=1000
            )
            found += [d for e in page if (d := decision_of(e)) is not None]
            if len(page) < 1000:
                break
            cursor = page[-1].seq
        return found[:limit]

    # -- counts ---------------------------------------------------------------------------------

    @verb
    def run_counts(self, *, tenant: Tenant | None = None) -> list[RunCount]:
        """Runs by tenant, workflow and status (one tenant, or every tenant with None)."""
        return self.parts.store.activity.run_counts(None if tenant is None else tenant_of(tenant))

    @verb
    def runs_by_period(
        self, *, tenant: Tenant = DEFAULT_TENANT, since: datetime, daily: bool = False
    ) -> list[PeriodCount]:
        """How many of the tenant's runs created since ``since`` are in each status now, by
        the UTC hour (or day, ``daily``) they were created in, oldest first."""
        return self.parts.store.activity.runs_by_period(tenant_of(tenant), since, daily=daily)

    @verb
    def step_latencies(
        self, *, tenant: Tenant = DEFAULT_TENANT, since: datetime, limit: int = 10_000
    ) -> list[StepLatency]:
        """Percentiles of how long each step of each workflow took (start to committed
        boundary) in the tenant's runs created since ``since``, from the newest ``limit``
        committed steps."""
        found = self.parts.store.activity.step_timings(tenant_of(tenant), since, limit=limit)
        return latencies(found)

    @verb
    def effect_counts(self, *, tenant: Tenant | None = None) -> list[EffectCount]:
        """Effects by tenant and status (one tenant, or every tenant with None)."""
        return self.parts.store.activity.effect_counts(
            None if tenant is None else tenant_of(tenant)
        )

    @verb
    def spend_counts(self, *, tenant: Tenant | None = None) -> list[SpendCount]:
        """Model tokens and cost recorded in the runs' budgets, by tenant and workflow."""
        return self.parts.store.activity.spend_counts(None if tenant is None else tenant_of(tenant))

    @verb
    def queue(self) -> Queue:
        """Runs of every tenant claimable now, and since when the oldest has been."""
        return self.parts.store.activity.queue(self.parts.clock.now())

    # -- what a stream hub follows (not scoped by tenant) ---------------------------------------

    @verb
    def moved_since(self, after: int, *, limit: int = 1000) -> list[tuple[int, str, str]]:
        """``(seq, tenant_id, run_id)`` of every event after ``after`` across tenants: how a
        stream hub learns which runs moved when the store cannot notify. Never show it to a
        caller: it is not scoped by tenant."""
        return self.parts.store.activity.events_since(after, limit=limit)

    @verb
    def last_event_seq(self) -> int:
        """The highest event sequence number of the store (0 when there are none)."""
        return self.parts.store.activity.last_event_seq()

    @verb
    def wait_for_events(self, timeout: float) -> list[tuple[str, str]] | None:
        """Block up to ``timeout`` seconds for committed events and return the
        ``(tenant_id, run_id)`` pairs that moved; None at once when the store cannot notify
        (SQLite: poll :meth:`moved_since` instead)."""
        return self.parts.store.activity.wait_for_events(timeout)

    # -- runs and workers that need watching ----------------------------------------------------

    @verb
    def stuck(
        self,
        *,
        threshold_seconds: float = 300.0,
        limit: int = 100,
        tenant: Tenant | None = None,
    ) -> list[Run]:
        """The watchdog's view: RUNNING runs of every tenant (or of ``tenant``) with no
        progress (no commit, no claim) for ``threshold_seconds``. Once their lease expires any
        worker reclaims them."""
        before = self.clock.now() - timedelta(seconds=threshold_seconds)
        tenant_id = None if tenant is None else tenant_of(tenant)
        return self.store.stuck_runs(before, limit=limit, tenant_id=tenant_id)

    @verb
    def workers(self) -> list[WorkerInfo]:
        """Workers of this database (``live`` or ``dead``), and those that left in the last
        hour (``stopped``); see :class:`~perdure.runtime.fleet.Fleet`."""
        return self._workers()
