"""The schema and the runs' versions: migrations, upgrades of stored runs to the running code,
scans across tenants and rollback re-queues. :class:`VersionsEngine`, a part of
:class:`~perdure.store.engine.engine.Engine`; contracts in :class:`~perdure.store.base.Store`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from perdure.core.model import JSON, Run, RunStatus
from perdure.store import migrate as migrations
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import event, fetch, guard_failure, need, write_fields
from perdure.store.rows import run_from_row


class VersionsEngine(EngineBase):
    """Migrations, and upgrades of stored runs. Part of the kernel's
    :class:`~perdure.store.engine.engine.Engine`."""

    def migrate(self, now: datetime) -> list[str]:
        """See :meth:`Store.migrate`. One transaction that one migrator at a time may hold (see
        :meth:`Driver.migration`); each file runs whole, through :meth:`Tx.script`."""
        d = self.driver
        known = migrations.discover(d.dialect)
        applied: list[str] = []
        with d.migration() as tx:
            if not need(tx, "migrations_table_exists", {})["present"]:
                tx.run("create_schema")
                tx.run("create_migrations_table")
            done = [(r["version"], r["name"], r["checksum"]) for r in tx.all("applied_migrations")]
            for m in migrations.pending(known, done):
                tx.script(m.sql)
                params = {"version": m.version, "name": m.name, "checksum": m.checksum}
                tx.run("record_migration", {**params, "now": d.stamp(now)})
                applied.append(f"{m.version:04d}_{m.name}")
        return applied

    def schema_version(self) -> int:
        """See :meth:`Store.schema_version`."""
        with self.driver.read() as tx:
            if not need(tx, "migrations_table_exists", {})["present"]:
                return 0
            found = tx.all("applied_migrations")
        return int(found[-1]["version"]) if found else 0

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
        state_seal: str | None = None,
        artifacts: Sequence[int] = (),
    ) -> Run:
        """See :meth:`Store.upgrade_run`."""
        d = self.driver
        at = d.stamp(now)
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        with d.write() as tx:
            row = tx.one(
                "upgrade_run",
                {
                    **ids,
                    "next_step": next_step,
                    "workflow_version": workflow_version,
                    "state_schema": state_schema,
                    "fence": fence,
                    "expected_version": expected_version,
                    "state_seal": state_seal,
                    "now": at,
                },
            )
            if row is None:
                raise guard_failure(tx, ids, fence, expected_version)
            write_fields(
                tx,
                ids,
                fields,
                step_seq=int(row["steps_done"]),
                version=int(row["state_version"]),
                drop=drop,
            )
            for artifact_id in artifacts:
                params = {**ids, "id": artifact_id, "fence": fence, "now": at}
                tx.run("commit_artifact", {**params, "step_seq": int(row["steps_done"])})
            event(tx, ids, "upgraded", next_step, fence, data, at)
        return run_from_row(row, d.when)

    def scan_runs(
        self, statuses: Sequence[RunStatus], *, workflow: str | None = None, limit: int = 1000
    ) -> list[Run]:
        """See :meth:`Store.scan_runs`."""
        params = {
            "statuses": self.driver.array([str(s) for s in statuses]),
            "workflow": workflow,
            "limit": limit,
        }
        return [run_from_row(r, self.driver.when) for r in fetch(self.driver, "scan_runs", params)]

    def requeue_too_new(
        self, workflow: str, *, workflow_version: int, state_schema: int, now: datetime
    ) -> list[tuple[str, str]]:
        """See :meth:`Store.requeue_too_new`."""
        at = self.driver.stamp(now)
        params = {
            "workflow": workflow,
            "workflow_version": workflow_version,
            "state_schema": state_schema,
            "now": at,
        }
        info = {
            "from": "QUARANTINED",
            "to": "RUNNING",
            "data": {"reason": "readable_again", "version": workflow_version},
        }
        with self.driver.write() as tx:
            found = [(r["tenant_id"], r["run_id"]) for r in tx.all("requeue_too_new", params)]
            for tenant_id, run_id in found:
                event(
                    tx, {"tenant_id": tenant_id, "run_id": run_id}, "status", None, None, info, at
                )
        return found
