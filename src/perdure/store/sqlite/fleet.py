"""The SQLite store's view of the fleet: worker beats, stuck runs, the next timer (see
:class:`perdure.store.base.Store` for contracts). SQLite has no notifications: idle workers
poll."""

from __future__ import annotations

from datetime import datetime

from perdure.core.model import Run, WorkerInfo
from perdure.store import rows
from perdure.store.sqlite.conn import Q, SqliteConnections, dt, ts
from perdure.store.sqlite.rows import run_row


class SqliteFleet(SqliteConnections):
    """Workers, the watchdog and wake-ups on SQLite."""

    notifies = False
    """SQLite cannot tell other processes that work is ready: idle workers poll."""

    def worker_beat(
        self, owner: str, *, host: str, pid: int, concurrency: int, runs_held: int, now: datetime
    ) -> None:
        """See :meth:`Store.worker_beat`."""
        with self._write() as conn:
            conn.execute(
                Q["worker_beat"],
                {
                    "owner": owner,
                    "host": host,
                    "pid": pid,
                    "concurrency": concurrency,
                    "runs_held": runs_held,
                    "now": ts(now),
                },
            )

    def worker_stopped(self, owner: str, now: datetime) -> None:
        """See :meth:`Store.worker_stopped`."""
        with self._write() as conn:
            conn.execute(Q["worker_stopped"], {"owner": owner, "now": ts(now)})

    def workers(self, since: datetime) -> list[WorkerInfo]:
        """See :meth:`Store.workers`."""
        return [
            rows.worker_from_row(r, dt) for r in self._read("list_workers", {"since": ts(since)})
        ]

    def stuck_runs(self, before: datetime, *, limit: int = 100) -> list[Run]:
        """See :meth:`Store.stuck_runs`."""
        return [
            run_row(r) for r in self._read("stuck_runs", {"before": ts(before), "limit": limit})
        ]

    def next_wake(self, now: datetime) -> datetime | None:
        """See :meth:`Store.next_wake`."""
        found = self._read("next_wake", {"now": ts(now)})
        return dt(found[0]["wake_at"]) if found else None

    def wait_for_work(self, timeout: float) -> bool:
        """See :meth:`Store.wait_for_work`: SQLite has no notifications; returns at once."""
        return False
