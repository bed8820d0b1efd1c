"""The SQLite store's effect ledger (see :class:`perdure.store.base.Store` for contracts)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from perdure.core.effects import EffectRecord, EffectStatus, NewEffect
from perdure.core.model import JSON
from perdure.store.rows import effect_change, to_json
from perdure.store.sqlite.conn import Q, SqliteConnections, ts
from perdure.store.sqlite.rows import effect_guard_failure, effect_row, event, guard_failure


class SqliteEffects(SqliteConnections):
    """Effects: intents, outcomes, listings."""

    # -- effects --------------------------------------------------------------------------------

    def plan_effect(
        self, tenant_id: str, run_id: str, fence: int, new: NewEffect, now: datetime
    ) -> EffectRecord:
        """See :meth:`Store.plan_effect`."""
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        at = ts(now)
        with self._write() as conn:
            inserted = conn.execute(
                Q["insert_effect"],
                {
                    **ids,
                    "key": new.key,
                    "step": new.step,
                    "step_seq": new.step_seq,
                    "name": new.name,
                    "target": new.target,
                    "operation": new.operation,
                    "request_hash": new.request_hash,
                    "request": to_json(new.request) or "null",
                    "compensator": new.compensator,
                    "fence": fence,
                    "now": at,
                },
            ).rowcount
            row = conn.execute(Q["get_effect"], {"tenant_id": tenant_id, "key": new.key})
            found = row.fetchone()
            if found is None:
                raise guard_failure(conn, ids, fence, -1)
            if inserted:
                info = {"key": new.key, "to": "planned"}
                event(conn, ids, "effect", new.step, fence, info, at)
        return effect_row(found)

    def update_effect(
        self,
        tenant_id: str,
        key: str,
        *,
        expected_status: EffectStatus,
        status: EffectStatus,
        fence: int | None,
        now: datetime,
        attempts_delta: int = 0,
        result: JSON = None,
        receipt: str | None = None,
        error: JSON = None,
        resolution: JSON = None,
    ) -> EffectRecord:
        """See :meth:`Store.update_effect`."""
        at = ts(now)
        with self._write() as conn:
            row = conn.execute(
                Q["update_effect"],
                {
                    "tenant_id": tenant_id,
                    "key": key,
                    "status": str(status),
                    "expected_status": str(expected_status),
                    "attempts_delta": attempts_delta,
                    "result": to_json(result),
                    "receipt": receipt,
                    "error": to_json(error),
                    "resolution": to_json(resolution),
                    "fence": fence,
                    "now": at,
                },
            ).fetchone()
            if row is None:
                raise effect_guard_failure(conn, tenant_id, key, fence, expected_status)
            ids = {"tenant_id": tenant_id, "run_id": row["run_id"]}
            info = effect_change(expected_status, status, key, resolution)
            event(conn, ids, "effect", row["step"], fence, info, at)
        return effect_row(row)

    def list_effects(
        self,
        tenant_id: str,
        *,
        run_id: str | None = None,
        statuses: Sequence[EffectStatus] = (),
        limit: int = 1000,
    ) -> list[EffectRecord]:
        """See :meth:`Store.list_effects`."""
        params = {
            "tenant_id": tenant_id,
            "run_id": run_id,
            "any_status": not statuses,
            "statuses": to_json([str(s) for s in statuses]),
            "limit": limit,
        }
        return [effect_row(r) for r in self._read("list_effects", params)]
