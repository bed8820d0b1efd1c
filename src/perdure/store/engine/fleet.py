"""The fleet: worker beats, stuck runs, the next timer. :class:`FleetEngine`, a part of
:class:`~perdure.store.engine.engine.Engine`; contracts in :class:`~perdure.store.base.Store`."""

from __future__ import annotations

from datetime import datetime

from perdure.core.model import Run, WorkerInfo
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import fetch
from perdure.store.rows import run_from_row, worker_from_row


class FleetEngine(EngineBase):
    """Workers, the watchdog, timers. Part of :class:`~perdure.store.engine.engine.Engine`."""

    def worker_beat(
        self,
        owner: str,
        *,
        host: str,
        pid: int,
        concurrency: int,
        runs_held: int,
        now: datetime,
        beat_seconds: float | None = None,
    ) -> None:
        """See :meth:`Store.worker_beat`."""
        params = {
            "owner": owner,
            "host": host,
            "pid": pid,
            "concurrency": concurrency,
            "runs_held": runs_held,
            "beat_seconds": beat_seconds,
            "now": self.driver.stamp(now),
        }
        with self.driver.write() as tx:
            tx.run("worker_beat", params)

    def worker_stopped(self, owner: str, now: datetime) -> None:
        """See :meth:`Store.worker_stopped`."""
        with self.driver.write() as tx:
            tx.run("worker_stopped", {"owner": owner, "now": self.driver.stamp(now)})

    def workers(self, since: datetime) -> list[WorkerInfo]:
        """See :meth:`Store.workers`."""
        found = fetch(self.driver, "list_workers", {"since": self.driver.stamp(since)})
        return [worker_from_row(r, self.driver.when) for r in found]

    def stuck_runs(
        self, before: datetime, *, limit: int = 100, tenant_id: str | None = None
    ) -> list[Run]:
        """See :meth:`Store.stuck_runs`."""
        params = {"before": self.driver.stamp(before), "limit": limit, "tenant_id": tenant_id}
        return [run_from_row(r, self.driver.when) for r in fetch(self.driver, "stuck_runs", params)]

    def next_wake(self, now: datetime) -> datetime | None:
        """See :meth:`Store.next_wake`."""
        found = fetch(self.driver, "next_wake", {"now": self.driver.stamp(now)})
        return self.driver.when(found[0]["wake_at"]) if found else None
