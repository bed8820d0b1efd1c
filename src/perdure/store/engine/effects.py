"""The effect ledger: intents, outcomes, listings. :class:`EffectsEngine`, a part of
:class:`~perdure.store.engine.engine.Engine`; contracts in :class:`~perdure.store.base.Store`.

Planning or moving an effect under a fence checks the run's fence in the same statement (on
PostgreSQL it share-locks the run's row, so a claim that would raise the fence waits for the
transaction instead of overtaking it). Where the driver can
(:attr:`~perdure.store.driver.Driver.one_statement_writes`), a new intent and a status change
under a fence are each one statement with their event, one round trip; what they refuse is
explained by the transaction path."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar, cast

import orjson

from perdure.core.effects import (
    EffectMove,
    EffectPlan,
    EffectRecord,
    EffectStatus,
    NewEffect,
)
from perdure.core.errors import PerdureError, StoreUnavailableError
from perdure.core.model import JSON, RunStatus
from perdure.store import rows
from perdure.store.driver import Driver, Tx
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import effect_guard_failure, event, fetch
from perdure.store.rows import (
    Params,
    Row,
    effect_change,
    effect_from_row,
    effect_from_values,
    from_json,
    to_json,
)


class _OfRun(Protocol):
    @property
    def tenant_id(self) -> str: ...

    @property
    def run_id(self) -> str: ...


G = TypeVar("G", bound=_OfRun)
"""An item of a group of effect writes: it names its run."""


class EffectsEngine(EngineBase):
    """The effect ledger. Part of :class:`~perdure.store.engine.engine.Engine`."""

    def plan_effect(
        self, tenant_id: str, run_id: str, fence: int, new: NewEffect, now: datetime
    ) -> EffectRecord:
        """See :meth:`Store.plan_effect`."""
        (answer,) = self.plan_effects([EffectPlan(tenant_id, run_id, fence, new)], now)
        if isinstance(answer, PerdureError):
            raise answer
        return answer

    def plan_effects(
        self, plans: Sequence[EffectPlan], now: datetime
    ) -> list[EffectRecord | PerdureError]:
        """See :meth:`Store.plan_effects`. One transaction of guarded inserts. Where the driver
        can (PostgreSQL), each intent is one statement with its event (``plan_effect``), all of
        them sent at once, and one that wrote nothing (recorded already, or refused) goes through
        the transaction path inside the same transaction; a lone intent is one round trip in
        autocommit. A group whose write fails for another reason than an unreachable database has
        each intent written alone, so that one fails by itself."""
        return _each_alone_on_failure(lambda group: _planned_group(self.driver, group, now), plans)

    def get_effect(self, tenant_id: str, key: str) -> EffectRecord | None:
        """See :meth:`Store.get_effect`."""
        found = fetch(self.driver, "get_effect", {"tenant_id": tenant_id, "key": key})
        return effect_from_row(found[0], self.driver.when) if found else None

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
        deadline: datetime | None = None,
    ) -> EffectRecord:
        """See :meth:`Store.update_effect`: one transaction. Every writer of a run's events holds
        the run's row first (with ``fence`` the move share-locks it), so a run's events commit in
        number order. (A runtime moves its effects with :meth:`move_effects`.)"""
        d = self.driver
        at = d.stamp(now)
        params = _params(
            d,
            at,
            tenant_id,
            key,
            expected_status,
            status,
            fence,
            attempts_delta=attempts_delta,
            result=result,
            receipt=receipt,
            error=error,
            resolution=resolution,
            deadline=deadline,
        )
        change = effect_change(expected_status, status, key, resolution)
        with d.write() as tx:
            if fence is None:  # a person's decision: lock the run as its other writers do
                current = tx.one("get_effect", {"tenant_id": tenant_id, "key": key})
                if current is not None:
                    tx.one("lock_run", {"tenant_id": tenant_id, "run_id": current["run_id"]})
            row = _moved(tx, d, params, change)
            if row is None:
                raise effect_guard_failure(tx, tenant_id, key, fence, expected_status)
        return effect_from_row(row, d.when)

    def move_effects(
        self, moves: Sequence[EffectMove], now: datetime
    ) -> list[EffectRecord | PerdureError]:
        """See :meth:`Store.move_effects`. One transaction of guarded moves, a refused one
        explained inside it. Where the driver can (PostgreSQL), each move is one statement with
        its event (``move_effect``), all of them sent at once: a group costs two round trips (with
        its ``COMMIT``) whatever its size, a lone move one (in autocommit). A group whose write
        fails for another reason than an unreachable database has each move written alone, so
        that one fails by itself."""
        return _each_alone_on_failure(lambda group: _moved_group(self.driver, group, now), moves)

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
            "statuses": self.driver.array([str(s) for s in statuses]),
            "limit": limit,
        }
        found = fetch(self.driver, "list_effects", params)
        return [effect_from_row(r, self.driver.when) for r in found]


def _planned_group(
    d: Driver, plans: Sequence[EffectPlan], now: datetime
) -> list[EffectRecord | PerdureError]:
    """The intents in one transaction (a lone one in autocommit, where the driver can)."""
    at = d.stamp(now)
    params = [_plan_params(d, p, at) for p in plans]
    if d.one_statement_writes and len(plans) == 1:  # one round trip, in autocommit
        with d.statement() as tx:
            found = tx.values("plan_effect", params[0])
        if found:
            return [effect_from_values(found[0], d.when)]
    with d.write() as tx:
        rows: list[Row | None] = [None] * len(plans)
        if d.one_statement_writes and len(plans) > 1:
            rows = tx.many([("plan_effect", p) for p in params])
        return [
            effect_from_row(row, d.when) if row is not None else _plan(tx, d, plan, p, at)
            for plan, p, row in zip(plans, params, rows, strict=True)
        ]


def _plan_params(d: Driver, plan: EffectPlan, at: Any) -> dict[str, Any]:
    """The parameters of ``insert_effect`` and ``plan_effect`` for one intent (``planned``
    and, for an intent recorded ``executing``, ``started``: its events' data)."""
    new = plan.effect
    executing = plan.executing
    return {
        "tenant_id": plan.tenant_id,
        "run_id": plan.run_id,
        "key": new.key,
        "step": new.step,
        "step_seq": new.step_seq,
        "name": new.name,
        "target": new.target,
        "operation": new.operation,
        "request_hash": new.request_hash,
        "request": to_json(new.request) or "null",
        "compensator": new.compensator,
        "fence": plan.fence,
        "now": at,
        "status": _EXECUTING if executing else _PLANNED,
        "attempts": int(executing),
        "deadline": d.stamp(plan.deadline) if executing else None,
        "planned": f'{{"key":{_text(new.key)},"to":"planned"}}',
        "started": (
            f'{{"key":{_text(new.key)},"from":"planned","to":"executing"}}' if executing else None
        ),
    }


_PLANNED, _EXECUTING = str(EffectStatus.PLANNED), str(EffectStatus.EXECUTING)


def _text(value: str) -> str:
    """A string as JSON text."""
    return orjson.dumps(value).decode()


def _plan(
    tx: Tx, d: Driver, plan: EffectPlan, params: dict[str, Any], at: Any
) -> EffectRecord | PerdureError:
    """One intent inside the transaction ``tx``: recorded (with its events) unless its key is
    already; the record, or why the guard refused it."""
    ids = {"tenant_id": plan.tenant_id, "run_id": plan.run_id}
    if tx.run("insert_effect", params):
        step, fence = plan.effect.step, plan.fence
        _event(tx, ids, step, fence, params["planned"], at)
        if params["started"] is not None:
            _event(tx, ids, step, fence, params["started"], at)
        return _inserted(d, plan, params)
    # the guard before the key: a worker whose fence was superseded is refused even when the
    # key is recorded (by the worker that took the run over), or it would call on that record
    run = tx.one("get_run", ids)
    found = tx.one("get_effect", {"tenant_id": plan.tenant_id, "key": plan.effect.key})
    if found is None or not _guard_holds(run, plan.fence):
        exc = rows.guard_failure(run, ids, plan.fence, -1)
        return exc if isinstance(exc, PerdureError) else PerdureError(str(exc))
    return effect_from_row(found, d.when)


def _guard_holds(run: Row | None, fence: int) -> bool:
    """Whether an intent under ``fence`` may be answered: the run is there, at that fence, and
    not finished."""
    return run is not None and run["fence"] == fence and not RunStatus(run["status"]).terminal


def _inserted(d: Driver, plan: EffectPlan, params: dict[str, Any]) -> EffectRecord:
    """The record ``insert_effect`` just wrote with ``params``, made from what it wrote (as
    ``get_effect`` would read it back, without the statement): the new effect's columns, its
    status, attempts and deadline, its times, and nothing settled yet."""
    new = plan.effect
    at = cast(datetime, d.when(params["now"]))  # a stamped time: never None
    return EffectRecord(
        key=new.key,
        tenant_id=plan.tenant_id,
        run_id=plan.run_id,
        step=new.step,
        step_seq=new.step_seq,
        name=new.name,
        target=new.target,
        operation=new.operation,
        request_hash=new.request_hash,
        request=from_json(params["request"]),
        status=EffectStatus(params["status"]),
        attempts=params["attempts"],
        result=None,
        receipt=None,
        last_error=None,
        compensator=new.compensator,
        resolution=None,
        created_at=at,
        updated_at=at,
        deadline=d.when(params["deadline"]),
    )


def _event(tx: Tx, ids: dict[str, str], step: str, fence: int, data: str, at: Any) -> None:
    """An ``effect`` event whose data is the JSON text ``data``."""
    params = {"type": "effect", "step": step, "fence": fence, "data": data, "at": at}
    tx.run("insert_event", {**ids, **params})


def _moved_group(
    d: Driver, moves: Sequence[EffectMove], now: datetime
) -> list[EffectRecord | PerdureError]:
    """The moves in one transaction (a lone one in autocommit, where the driver can)."""
    at = d.stamp(now)
    work = [_move_work(d, at, m) for m in moves]
    if d.one_statement_writes and len(moves) == 1:  # one round trip, in autocommit
        with d.statement() as tx:
            found = tx.values(*_move_statement(*work[0]))
        if found:
            return [effect_from_values(found[0], d.when)]
        with d.read() as tx:  # nothing was written: say why
            return [_refusal(tx, moves[0])]
    with d.write() as tx:
        if d.one_statement_writes:  # every statement sent at once
            rows = tx.many([_move_statement(params, change) for params, change in work])
        else:
            rows = [_moved(tx, d, params, change) for params, change in work]
        return [
            _refusal(tx, m) if row is None else effect_from_row(row, d.when)
            for m, row in zip(moves, rows, strict=True)
        ]


def _each_alone_on_failure(
    write: Callable[[Sequence[G]], list[EffectRecord | PerdureError]], items: Sequence[G]
) -> list[EffectRecord | PerdureError]:
    """``write(items)`` in one transaction, the items taken in (tenant, run) order so that
    their runs' rows are locked in the order every writer of several runs takes them (no
    deadlock with a group of boundaries or the heartbeat), the answers given in the order of
    ``items``; when the write fails for another reason than an unreachable database, each
    item is written alone, so that one fails by itself."""
    order = sorted(range(len(items)), key=lambda i: (items[i].tenant_id, items[i].run_id))
    try:
        answers = dict(zip(order, write([items[i] for i in order]), strict=True))
    except StoreUnavailableError:
        raise  # the outcome is unknown: the run's next execution reads what landed
    except PerdureError as exc:
        if len(items) == 1:
            return [exc]
        return [answer for item in items for answer in _each_alone_on_failure(write, [item])]
    return [answers[i] for i in range(len(items))]


def _params(
    d: Driver,
    at: Any,
    tenant_id: str,
    key: str,
    expected_status: EffectStatus,
    status: EffectStatus,
    fence: int | None,
    *,
    attempts_delta: int,
    result: JSON,
    receipt: str | None,
    error: JSON,
    resolution: JSON = None,
    deadline: datetime | None,
) -> dict[str, Any]:
    """The parameters of ``update_effect`` and ``move_effect`` for one move."""
    return {
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


def _move_work(d: Driver, at: Any, m: EffectMove) -> tuple[dict[str, Any], dict[str, JSON]]:
    """A worker's move: its parameters and its event's data."""
    params = _params(
        d,
        at,
        m.tenant_id,
        m.key,
        m.expected_status,
        m.status,
        m.fence,
        attempts_delta=m.attempts_delta,
        result=m.result,
        receipt=m.receipt,
        error=m.error,
        deadline=m.deadline,
    )
    return params, effect_change(m.expected_status, m.status, m.key, None)


def _move_statement(params: dict[str, Any], change: dict[str, JSON]) -> tuple[str, Params]:
    """``move_effect`` with its parameters: the move and its event (``change``: its data)."""
    return "move_effect", {**params, "change": to_json(change)}


def _moved(tx: Tx, d: Driver, params: dict[str, Any], change: dict[str, JSON]) -> Row | None:
    """One guarded move and its ``effect`` event inside the transaction ``tx``: the effect's
    row after it, or None when the guard matched nothing (nothing was written). One statement
    where the driver can (PostgreSQL); on SQLite, which writes one table per statement, the
    update and then the event."""
    if d.one_statement_writes:
        return tx.one(*_move_statement(params, change))
    row = tx.one("update_effect", params)
    if row is not None:
        ids = {"tenant_id": params["tenant_id"], "run_id": row["run_id"]}
        event(tx, ids, "effect", row["step"], params["fence"], change, params["now"])
    return row


def _refusal(tx: Tx, m: EffectMove) -> PerdureError:
    """Why a move's guard matched nothing (read in ``tx``)."""
    exc = effect_guard_failure(tx, m.tenant_id, m.key, m.fence, m.expected_status)
    return exc if isinstance(exc, PerdureError) else PerdureError(str(exc))
