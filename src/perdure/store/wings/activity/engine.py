"""What happened and what waits: tenants' event feeds, counts and the queue.

:class:`ActivityWing`, the ``activity`` wing of the store; contracts in
:class:`~perdure.store.wings.activity.contract.ActivityStore`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from perdure.core.effects import EffectStatus
from perdure.core.model import Event, RunStatus
from perdure.core.observed import (
    EffectCount,
    PeriodCount,
    Queue,
    RunCount,
    SpendCount,
    StepTiming,
)
from perdure.store.driver import LockTimeoutError
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import fetch
from perdure.store.rows import Params, Row, event_from_row, step_timing_from_row

FEED_TRIES = 5


class ActivityWing(EngineBase):
    """Event feeds, counts and the queue: the ``activity`` wing."""

    def tenant_events(
        self,
        tenant_id: str,
        *,
        after: int = 0,
        types: Sequence[str] = (),
        workflow: str | None = None,
        limit: int = 1000,
    ) -> list[Event]:
        """See :meth:`ActivityStore.tenant_events`."""
        params = {
            "tenant_id": tenant_id,
            "after": after,
            "any_type": not types,
            "types": self.driver.array(list(types)),
            "workflow": workflow,
            "limit": limit,
        }
        found = self._feed("tenant_events", params)
        return [event_from_row(r, self.driver.when) for r in found]

    def events_since(self, after: int, *, limit: int = 1000) -> list[tuple[int, str, str]]:
        """See :meth:`ActivityStore.events_since`."""
        found = self._feed("events_since", {"after": after, "limit": limit})
        return [(r["seq"], r["tenant_id"], r["run_id"]) for r in found]

    def last_event_seq(self) -> int:
        """See :meth:`ActivityStore.last_event_seq`: the newest event number below which no
        event can still appear."""
        for _ in range(FEED_TRIES - 1):
            found = self._feed("last_event_seq", {})
            if found:
                return int(found[0]["seq"])
        with self.driver.feed() as tx:  # the last try raises when writers keep it waiting
            return int(tx.all("last_event_seq", {})[0]["seq"])

    def _feed(self, query: str, params: Params) -> list[Row]:
        """A read of the event feed (see :meth:`Driver.feed`); no rows when writers kept it
        waiting too long: their events come with the next read."""
        try:
            with self.driver.feed() as tx:
                return tx.all(query, params)
        except LockTimeoutError:
            return []

    def run_counts(self, tenant_id: str | None = None) -> list[RunCount]:
        """See :meth:`ActivityStore.run_counts`."""
        found = fetch(self.driver, "run_counts", {"tenant_id": tenant_id})
        return [
            RunCount(r["tenant_id"], r["workflow"], RunStatus(r["status"]), int(r["n"]))
            for r in found
        ]

    def runs_by_period(self, tenant_id: str, since: datetime, *, daily: bool) -> list[PeriodCount]:
        """See :meth:`ActivityStore.runs_by_period`."""
        params = {
            "tenant_id": tenant_id,
            "since": self.driver.stamp(since.astimezone(UTC)),
            "width": 10 if daily else 13,
        }
        found = fetch(self.driver, "runs_by_period", params)
        return [PeriodCount(r["period"], RunStatus(r["status"]), int(r["n"])) for r in found]

    def step_timings(self, tenant_id: str, since: datetime, *, limit: int) -> list[StepTiming]:
        """See :meth:`ActivityStore.step_timings`."""
        d = self.driver
        params = {"tenant_id": tenant_id, "since": d.stamp(since.astimezone(UTC)), "limit": limit}
        return [step_timing_from_row(r, d.when) for r in fetch(d, "step_timings", params)]

    def effect_counts(self, tenant_id: str | None = None) -> list[EffectCount]:
        """See :meth:`ActivityStore.effect_counts`."""
        found = fetch(self.driver, "effect_counts", {"tenant_id": tenant_id})
        return [EffectCount(r["tenant_id"], EffectStatus(r["status"]), int(r["n"])) for r in found]

    def spend_counts(self, tenant_id: str | None = None) -> list[SpendCount]:
        """See :meth:`ActivityStore.spend_counts`."""
        found = fetch(self.driver, "spend_counts", {"tenant_id": tenant_id})
        return [
            SpendCount(r["tenant_id"], r["workflow"], int(r["tokens"]), float(r["cost"]))
            for r in found
        ]

    def queue(self, now: datetime) -> Queue:
        """See :meth:`ActivityStore.queue`."""
        row = fetch(self.driver, "runnable_summary", {"now": self.driver.stamp(now)})[0]
        return Queue(int(row["n"]), self.driver.when(row["oldest"]))

    def wait_for_events(self, timeout: float) -> list[tuple[str, str]] | None:
        """See :meth:`ActivityStore.wait_for_events`: the driver listens, or returns None."""
        return self.driver.wait_for_events(timeout)
