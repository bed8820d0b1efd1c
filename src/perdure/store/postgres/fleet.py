"""The PostgreSQL store's view of the fleet: worker beats, stuck runs, the next timer, and
LISTEN/NOTIFY wake-ups (see :class:`perdure.store.base.Store` for contracts)."""

from __future__ import annotations

import threading
from datetime import datetime

import psycopg

from perdure.core.model import Run, WorkerInfo
from perdure.store import rows
from perdure.store.postgres.conn import PostgresConnections, Q, when


class PostgresFleet(PostgresConnections):
    """Workers, the watchdog and wake-ups on PostgreSQL."""

    notifies = True
    """Idle workers are woken by LISTEN/NOTIFY (polling stays as the fallback)."""

    _listener: psycopg.Connection[object] | None = None
    _listen_lock = threading.Lock()

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
                    "now": now,
                },
            )

    def worker_stopped(self, owner: str, now: datetime) -> None:
        """See :meth:`Store.worker_stopped`."""
        with self._write() as conn:
            conn.execute(Q["worker_stopped"], {"owner": owner, "now": now})

    def workers(self, since: datetime) -> list[WorkerInfo]:
        """See :meth:`Store.workers`."""
        return [rows.worker_from_row(r, when) for r in self._read("list_workers", {"since": since})]

    def stuck_runs(self, before: datetime, *, limit: int = 100) -> list[Run]:
        """See :meth:`Store.stuck_runs`."""
        found = self._read("stuck_runs", {"before": before, "limit": limit})
        return [rows.run_from_row(r, when) for r in found]

    def next_wake(self, now: datetime) -> datetime | None:
        """See :meth:`Store.next_wake`."""
        found = self._read("next_wake", {"now": now})
        return when(found[0]["wake_at"]) if found else None

    def wait_for_work(self, timeout: float) -> bool:
        """See :meth:`Store.wait_for_work`: LISTEN on ``perdure_work`` with a connection of its
        own (outside the pool). A lost connection is opened again on the next call."""
        with self._listen_lock:
            try:
                if self._listener is None or self._listener.closed:
                    self._listener = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
                    self._listener.execute(Q["listen_work"])
                for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                    return True
            except psycopg.Error:
                if self._listener is not None:
                    self._listener.close()
                self._listener = None
        return False

    def close(self) -> None:
        """Close the listener and the pool."""
        with self._listen_lock:
            if self._listener is not None:
                self._listener.close()
                self._listener = None
        super().close()
