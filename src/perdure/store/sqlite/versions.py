"""The SQLite store's part in reading old runs: upgrades, scans and rollback re-queues (see
:class:`perdure.store.base.Store` for contracts)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from perdure.core.model import JSON, Run, RunStatus
from perdure.store.rows import to_json
from perdure.store.sqlite.conn import Q, SqliteConnections, ts
from perdure.store.sqlite.rows import event, guard_failure, run_row, write_fields


class SqliteVersions(SqliteConnections):
    """Upgrading stored runs to the running code, and finding runs across tenants."""

    def upgrade_run(
        self,
        tenant_id: str,
        run_id: str,
        *,
        fence: int,
        expected_version: int,
        fields: dict[str, bytes],
        drop: Sequence[str],
        next_step: str | None,
        workflow_version: int,
        state_schema: int,
        now: datetime,
        data: JSON,
    ) -> Run:
        """See :meth:`Store.upgrade_run`."""
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        at = ts(now)
        with self._write() as conn:
            row = conn.execute(
                Q["upgrade_run"],
                {
                    **ids,
                    "next_step": next_step,
                    "workflow_version": workflow_version,
                    "state_schema": state_schema,
                    "fence": fence,
                    "expected_version": expected_version,
                    "now": at,
                },
            ).fetchone()
            if row is None:
                raise guard_failure(conn, ids, fence, expected_version)
            write_fields(conn, ids, fields)
            for name in drop:
                conn.execute(Q["delete_field"], {**ids, "field": name})
            event(conn, ids, "upgraded", next_step, fence, data, at)
        return run_row(row)

    def scan_runs(
        self, statuses: Sequence[RunStatus], *, workflow: str | None = None, limit: int = 1000
    ) -> list[Run]:
        """See :meth:`Store.scan_runs`."""
        params = {
            "statuses": to_json([str(s) for s in statuses]),
            "workflow": workflow,
            "limit": limit,
        }
        return [run_row(r) for r in self._read("scan_runs", params)]

    def requeue_too_new(
        self, workflow: str, *, workflow_version: int, state_schema: int, now: datetime
    ) -> list[tuple[str, str]]:
        """See :meth:`Store.requeue_too_new`."""
        at = ts(now)
        with self._write() as conn:
            rows = conn.execute(
                Q["requeue_too_new"],
                {
                    "workflow": workflow,
                    "workflow_version": workflow_version,
                    "state_schema": state_schema,
                    "now": at,
                },
            ).fetchall()
            found = [(r["tenant_id"], r["run_id"]) for r in rows]
            for tenant_id, run_id in found:
                ids = {"tenant_id": tenant_id, "run_id": run_id}
                info = {
                    "from": "QUARANTINED",
                    "to": "RUNNING",
                    "data": {"reason": "readable_again", "version": workflow_version},
                }
                event(conn, ids, "status", None, None, info, at)
        return found
