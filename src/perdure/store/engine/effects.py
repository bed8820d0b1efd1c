"""The effect ledger: intents, outcomes, listings. Methods of
:class:`~perdure.store.engine.Engine`; contracts in :class:`~perdure.store.base.Store`.

Planning or moving an effect under a fence checks the run's fence in the same statement (on
PostgreSQL it share-locks the run's row, so a claim that would raise the fence waits for the
transaction instead of overtaking it). Where the driver can
(:attr:`~perdure.store.driver.Driver.one_statement_writes`), a new intent and a status change
under a fence are each one statement with their event, one round trip; what they refuse is
explained by the transaction path."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from perdure.core.effects import EffectRecord, EffectStatus, NewEffect
from perdure.core.model import JSON
from perdure.store.engine.tx import effect_guard_failure, event, fetch, guard_failure
from perdure.store.rows import effect_change, effect_from_row, to_json

if TYPE_CHECKING:
    from perdure.store.engine import Engine


def plan_effect(
    self: Engine, tenant_id: str, run_id: str, fence: int, new: NewEffect, now: datetime
) -> EffectRecord:
    """See :meth:`Store.plan_effect`."""
    d = self.driver
    at = d.stamp(now)
    ids = {"tenant_id": tenant_id, "run_id": run_id}
    key = {"tenant_id": tenant_id, "key": new.key}
    params = {
        **ids,
        **key,
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
    }
    planned = {"key": new.key, "to": "planned"}
    if d.one_statement_writes:
        with d.statement() as tx:
            row = tx.one("plan_effect", {**params, "planned": to_json(planned)})
        if row is not None:
            return effect_from_row(row, d.when)
        # nothing written: recorded already, or refused; the transaction below says which
    with d.write() as tx:
        inserted = tx.run("insert_effect", params)
        found = tx.one("get_effect", key)
        if found is None:
            raise guard_failure(tx, ids, fence, -1)
        if inserted:
            event(tx, ids, "effect", new.step, fence, planned, at)
    return effect_from_row(found, d.when)


def get_effect(self: Engine, tenant_id: str, key: str) -> EffectRecord | None:
    """See :meth:`Store.get_effect`."""
    found = fetch(self.driver, "get_effect", {"tenant_id": tenant_id, "key": key})
    return effect_from_row(found[0], self.driver.when) if found else None


def update_effect(
    self: Engine,
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
    deadline: datetime | None = None,
) -> EffectRecord:
    """See :meth:`Store.update_effect`. Every writer of a run's events holds the run's row
    first (with ``fence`` the query share-locks it), so a run's events commit in number
    order."""
    d = self.driver
    at = d.stamp(now)
    params = {
        "tenant_id": tenant_id,
        "key": key,
        "status": str(status),
        "expected_status": str(expected_status),
        "attempts_delta": attempts_delta,
        "result": to_json(result),
        "receipt": receipt,
        "error": to_json(error),
        "resolution": to_json(resolution),
        "deadline": d.stamp(deadline),
        "fence": fence,
        "now": at,
    }
    info = effect_change(expected_status, status, key, resolution)
    if d.one_statement_writes and fence is not None:
        with d.statement() as tx:
            moved = tx.one("move_effect", {**params, "change": to_json(info)})
        if moved is not None:
            return effect_from_row(moved, d.when)
        with d.read() as tx:  # nothing was written: say why
            raise effect_guard_failure(tx, tenant_id, key, fence, expected_status)
    with d.write() as tx:
        if fence is None:  # a person's decision: lock the run as its other writers do
            current = tx.one("get_effect", {"tenant_id": tenant_id, "key": key})
            if current is not None:
                tx.one("lock_run", {"tenant_id": tenant_id, "run_id": current["run_id"]})
        row = tx.one("update_effect", params)
        if row is None:
            raise effect_guard_failure(tx, tenant_id, key, fence, expected_status)
        ids = {"tenant_id": tenant_id, "run_id": row["run_id"]}
        event(tx, ids, "effect", row["step"], fence, info, at)
    return effect_from_row(row, d.when)


def list_effects(
    self: Engine,
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
        "statuses": self.driver.array([str(s) for s in statuses]),
        "limit": limit,
    }
    found = fetch(self.driver, "list_effects", params)
    return [effect_from_row(r, self.driver.when) for r in found]
