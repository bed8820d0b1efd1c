"""Archive and restore: every row a run owns, read out as :class:`ArchivedRow` lines and written
back: :class:`ArchiveWing`, the ``archive`` wing of the store; contracts in
:class:`~perdure.store.wings.archive.contract.ArchiveStore`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from perdure.core.errors import InvalidInputError, RunNotFoundError
from perdure.core.history import ArchivedRow
from perdure.core.model import Run
from perdure.store.driver import Driver
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import event, need
from perdure.store.rows import run_from_row

EXPORTED = (
    "runs",
    "steps",
    "state_fields",
    "state_tails",
    "history",
    "events",
    "effects",
    "approvals",
    "signals",
    "savepoints",
    "forks",
    "artifacts",
    "messages",
)
"""The tables archived, in the order they are written back."""

TIMES = frozenset(
    {
        "lease_until",
        "created_at",
        "updated_at",
        "wake_at",
        "retry_since",
        "started_at",
        "finished_at",
        "at",
        "requested_at",
        "decided_at",
        "received_at",
        "consumed_at",
        "expires_at",
        "committed_at",
    }
)

RESTORE = {
    "runs": "restore_run",
    "steps": "restore_step",
    "state_fields": "upsert_field",
    "state_tails": "insert_tail",
    "history": "insert_history",
    "events": "restore_event",
    "effects": "restore_effect",
    "approvals": "restore_approval",
    "signals": "restore_signal",
    "savepoints": "insert_savepoint",
    "forks": "insert_fork",
    "artifacts": "restore_artifact",
    "messages": "restore_message",
}

RENAMED = {"created_by": "by"}
"""Columns whose query parameter has another name (savepoints, forks)."""

FLAGS = {"state_fields": "log", "history": "appended"}
"""Flag columns an archive made before field logs does not hold (they are false there)."""


class ArchiveWing(EngineBase):
    """A run's rows out and back in (the cold tier): the ``archive`` wing of the store."""

    def export_run(self, tenant_id: str, run_id: str) -> list[ArchivedRow]:
        """See :meth:`ArchiveStore.export_run`."""
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        out: list[ArchivedRow] = []
        with self.driver.read() as tx:
            for table in EXPORTED:
                for row in tx.all(f"export_{table}", ids):
                    out.append(ArchivedRow(table, {k: _plain(v) for k, v in dict(row).items()}))  # type: ignore[call-overload]
        if not out or out[0].table != "runs":
            raise RunNotFoundError(f"no run {run_id} in tenant {tenant_id}")
        return out

    def import_run(self, tenant_id: str, rows: Sequence[ArchivedRow], now: datetime) -> Run:
        """See :meth:`ArchiveStore.import_run`."""
        d = self.driver
        heads = [r for r in rows if r.table == "runs"]
        if len(heads) != 1 or heads[0].row.get("tenant_id") != tenant_id:
            raise InvalidInputError(
                "the archive does not hold exactly one run of this tenant", fix="check the archive"
            )
        run_id = str(heads[0].row.get("run_id"))
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        with d.write() as tx:
            if tx.one("get_run", ids) is not None:
                raise InvalidInputError(
                    f"run {run_id} is in the database already; nothing was restored",
                    fix="delete it first, or leave the archive where it is",
                )
            for table in EXPORTED:
                for r in rows:
                    if r.table != table:
                        continue
                    if (
                        r.row.get("run_id") not in (run_id, None)
                        or r.row.get("tenant_id") != tenant_id
                    ):
                        raise InvalidInputError(f"an archived {table} row belongs to another run")
                    params = _params(d, r.row)
                    if table in FLAGS:
                        params[FLAGS[table]] = bool(params.get(FLAGS[table]))
                    tx.run(RESTORE[table], params)
            event(tx, ids, "restored", None, None, {"rows": len(rows)}, d.stamp(now))
            row = need(tx, "get_run", ids)
        return run_from_row(row, d.when)


def _plain(value: Any) -> Any:
    """A column value as JSON: times as ISO-8601 text, the rest as it is."""
    return value.isoformat(timespec="microseconds") if isinstance(value, datetime) else value


def _params(d: Driver, row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        timed = key in TIMES and isinstance(value, str)
        out[RENAMED.get(key, key)] = d.stamp(datetime.fromisoformat(value)) if timed else value
    if "created_at" in row and "by" in out:  # savepoints and forks name the time "now"
        out["now"] = out.pop("created_at")
    return out
