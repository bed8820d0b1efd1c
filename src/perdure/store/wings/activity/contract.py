"""The contract of the ``activity`` wing (tenants' event feeds, operator counts and the queue),
reached as ``store.activity``.

The rules of :mod:`perdure.store.base` (tenant scoping, "now" as a parameter, one
transaction per method, translated driver errors) hold for every method here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from perdure.core.model import (
    Event,
)
from perdure.core.observed import (
    EffectCount,
    PeriodCount,
    Queue,
    RunCount,
    SpendCount,
    StepTiming,
)


class ActivityStore(Protocol):
    """API keys, the event feeds that live streams read, and the counts operators watch."""

    def tenant_events(
        self,
        tenant_id: str,
        *,
        after: int = 0,
        types: Sequence[str] = (),
        workflow: str | None = None,
        limit: int = 1000,
    ) -> list[Event]:
        """Events of every run of one tenant with ``seq > after``, oldest first, filtered by
        type (any of) and the run's workflow."""
        ...

    def events_since(self, after: int, *, limit: int = 1000) -> list[tuple[int, str, str]]:
        """``(seq, tenant_id, run_id)`` of events of every tenant with ``seq > after``, oldest
        first: what a stream hub polls to know which runs moved (not scoped by tenant; never
        shown to a caller)."""
        ...

    def last_event_seq(self) -> int:
        """The highest event sequence number (0 when there are none)."""
        ...

    def run_counts(self, tenant_id: str | None = None) -> list[RunCount]:
        """How many runs there are by tenant, workflow and status (one tenant, or all)."""
        ...

    def runs_by_period(self, tenant_id: str, since: datetime, *, daily: bool) -> list[PeriodCount]:
        """How many runs of the tenant created since ``since`` are in each status now, by the
        UTC hour (or day, ``daily``) they were created in, oldest period first. Read-only."""
        ...

    def step_timings(self, tenant_id: str, since: datetime, *, limit: int) -> list[StepTiming]:
        """The committed steps of the tenant's runs created since ``since``, newest runs
        first, at most ``limit``. Read-only."""
        ...

    def effect_counts(self, tenant_id: str | None = None) -> list[EffectCount]:
        """How many effects there are by tenant and status (one tenant, or all)."""
        ...

    def spend_counts(self, tenant_id: str | None = None) -> list[SpendCount]:
        """Tokens and cost the runs' budgets recorded, summed by tenant and workflow (one
        tenant, or all)."""
        ...

    def queue(self, now: datetime) -> Queue:
        """Runs of every tenant claimable at ``now`` (by any worker of any workflow), and
        since when the oldest has been claimable."""
        ...

    def wait_for_events(self, timeout: float) -> list[tuple[str, str]] | None:
        """Block up to ``timeout`` seconds until events are committed; return the
        ``(tenant_id, run_id)`` pairs they belong to (PostgreSQL LISTEN/NOTIFY; ``[]`` on
        timeout). A store without notifications (SQLite), or one whose listening connection
        was just lost, returns None at once and the caller polls :meth:`events_since`. Callers
        re-read the events either way."""
        ...
