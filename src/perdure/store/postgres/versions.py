"""The PostgreSQL store's part in reading old runs: upgrades, scans and rollback re-queues (see
:class:`perdure.store.base.Store` for contracts)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from perdure.core.model import JSON, Run, RunStatus
from perdure.store.postgres.conn import (
    PostgresConnections,
    Q,
    event,
    guard_failure,
    maybe,
    when,
    write_fields,
)
from perdure.store.rows import run_from_row


class PostgresVersions(PostgresConnections):
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
        with self._write() as conn:
            row = maybe(
                conn,
                "upgrade_run",
                {
                    **ids,
                    "next_step": next_step,
                    "workflow_version": workflow_version,
                    "state_schema": state_schema,
                    "fence": fence,
                    "expected_version": expected_version,
                    "now": now,
                },
            )
            if row is None:
                raise guard_failure(conn, ids, fence, expected_version)
            write_fields(conn, ids, fields)
            for name in drop:
                conn.execute(Q["delete_field"], {**ids, "field": name})
            event(conn, ids, "upgraded", next_step, fence, data, now)
        return run_from_row(row, when)

    def scan_runs(
        self, statuses: Sequence[RunStatus], *, workflow: str | None = None, limit: int = 1000
    ) -> list[Run]:
        """See :meth:`Store.scan_runs`."""
        params = {"statuses": [str(s) for s in statuses], "workflow": workflow, "limit": limit}
        return [run_from_row(r, when) for r in self._read("scan_runs", params)]

    def requeue_too_new(
        self, workflow: str, *, workflow_version: int, state_schema: int, now: datetime
    ) -> list[tuple[str, str]]:
        """See :meth:`Store.requeue_too_new`."""
        params = {
            "workflow": workflow,
            "workflow_version": workflow_version,
            "state_schema": state_schema,
            "now": now,
        }
        with self._write() as conn:
            found = [
                (r["tenant_id"], r["run_id"]) for r in conn.execute(Q["requeue_too_new"], params)
            ]
            for tenant_id, run_id in found:
                info = {
                    "from": "QUARANTINED",
                    "to": "RUNNING",
                    "data": {"reason": "readable_again", "version": workflow_version},
                }
                event(
                    conn,
                    {"tenant_id": tenant_id, "run_id": run_id},
                    "status",
                    None,
                    None,
                    info,
                    now,
                )
        return found
