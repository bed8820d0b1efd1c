"""What an effect's record becomes after a call: the moves of its status under the fence,
what a failed call leads to (rejected, retried, reconciled, handed to a person), and what a
re-execution that finds a stopped or settled record does. Held by the
:class:`~perdure.runtime.execution.effect_runner.EffectRunner` of one execution."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Awaitable
from datetime import datetime
from typing import TypeVar, cast

from perdure.core.clock import Clock
from perdure.core.effect_calls import Reconcile
from perdure.core.effects import (
    EFFECT_ALLOWED,
    EffectMove,
    EffectPlan,
    EffectRecord,
    EffectRejectedError,
    EffectStatus,
    ErrorClass,
    Reconciled,
    classify,
    error_json,
    storable,
)
from perdure.core.errors import LeaseLostError, PerdureError
from perdure.core.model import JSON
from perdure.core.retry import RetryPolicy
from perdure.core.signals import Escalate, RetryLater
from perdure.runtime.aio import EventLoop
from perdure.runtime.execution.claim import Claim
from perdure.runtime.execution.group_commit import Group
from perdure.runtime.execution.outages import ride_out
from perdure.store.base import Store

T = TypeVar("T")

S = EffectStatus


class EffectOutcomes:
    """Status moves and failure handling of one execution's effects (one fence)."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        claim: Claim,
        loop: EventLoop,
        moves: Group[EffectMove, EffectRecord],
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.claim = claim
        self.loop = loop
        self.moves = moves
        """Where status moves are written, with other executions' when they coincide."""
        self.rng = rng or random.Random()
        """Jitter for retry delays."""

    def awaited(self, value: T | Awaitable[T]) -> T:
        """The value an ``execute``/``reconcile``/``compensate`` call produced: an async
        callable's coroutine is run on the event loop and its result returned."""
        if isinstance(value, Awaitable):
            return cast(T, self.loop.run(value))
        return value

    def failed(
        self,
        record: EffectRecord,
        exc: Exception,
        reconcile: Reconcile | None,
        retry: RetryPolicy | None,
    ) -> JSON:
        error = error_json(exc)
        kind = classify(exc)
        if kind is ErrorClass.PERMANENT:
            self.move(record, S.REJECTED, error=error)
            raise EffectRejectedError(record.key, error)
        if kind is ErrorClass.BUDGET_EXHAUSTED:
            self.move(record, S.PLANNED, error=error)
            action = retry.on_exhausted if retry is not None else "needs_attention"
            raise Escalate(action, "budget_exhausted", self._evidence(record, error))
        if kind is ErrorClass.UNKNOWN_OUTCOME:
            if reconcile is None:
                self.move(record, S.AMBIGUOUS, error=error)
                raise Escalate("needs_attention", "ambiguous_effect", self._evidence(record, error))
            record = self.reconcile(record, reconcile, recovering=False, error=error)
            if record.status is S.CONFIRMED:
                return record.replayed()
            raise self._retry_or_escalate(record, error, retry)
        record = self.move(record, S.PLANNED, error=error)
        retryable = retry is not None and retry.retries(exc, str(error["kind"]), transient=True)
        raise self._retry_or_escalate(record, error, retry, retryable)

    def reconcile(
        self,
        record: EffectRecord,
        reconcile: Reconcile,
        *,
        recovering: bool,
        error: JSON = None,
        in_flight_until: datetime | None = None,
    ) -> EffectRecord:
        """Ask the provider what happened; confirmed -> confirmed, not found -> planned (the
        interrupted attempt is not counted when recovering), unknown -> ambiguous + escalate.

        ``in_flight_until``: another execution's attempt may still be under way until then (its
        deadline): "not found" proves nothing yet, so the run sleeps durably until that time and
        asks again, the effect staying ``executing``."""
        try:
            found = self.awaited(reconcile(record.request, record.key))
        except Exception as exc:
            found, error = Reconciled.unknown(), error_json(exc)
        if found.status == "confirmed":
            return self.move(
                record, S.CONFIRMED, result=storable(found.result), receipt=found.receipt
            )
        if found.status == "not_found" and in_flight_until is not None:
            raise RetryLater(
                in_flight_until,
                {
                    "effect": record.key,
                    "kind": "in_flight",
                    "message": "another worker's attempt may still land until its deadline",
                    "deadline": in_flight_until.isoformat(),
                },
            )
        if found.status == "not_found":
            note: dict[str, JSON] = {
                "class": "reconciled",
                "kind": "not_found",
                "message": "provider has no record",
            }
            if found.result is not None:  # what the reconciler found worth keeping
                note["found"] = found.result
            return self.move(
                record, S.PLANNED, error=error or note, attempts_delta=-int(recovering)
            )
        if record.status is not S.AMBIGUOUS:
            record = self.move(record, S.AMBIGUOUS, error=error)
        raise Escalate("needs_attention", "ambiguous_effect", self._evidence(record, error))

    def _retry_or_escalate(
        self,
        record: EffectRecord,
        error: dict[str, JSON],
        retry: RetryPolicy | None,
        retryable: bool | None = None,
    ) -> Escalate | RetryLater:
        if retry is not None:
            after = error.get("retry_after")
            at = retry.next_try(
                attempt=record.attempts,
                kind=str(error.get("kind")),
                first_failure=record.created_at,
                now=self.clock.now(),
                rng=self.rng,
                retry_after=float(after) if isinstance(after, int | float) else None,
                retryable=retryable,
            )
            if at is not None:
                return RetryLater(at, {"effect": record.key, **error})
        action = retry.on_exhausted if retry is not None else "needs_attention"
        return Escalate(action, "retries_exhausted", self._evidence(record, error))

    def stopped(self, key: str, record: EffectRecord | None, retry: RetryPolicy | None) -> Escalate:
        """The gate said stop: an unknown outcome nobody can reconcile, or attempts used up."""
        if record is not None and record.status is S.EXECUTING:
            record = self.move(
                record,
                S.AMBIGUOUS,
                error={
                    "class": "unknown_outcome",
                    "kind": "interrupted",
                    "message": "the process stopped during the call",
                },
            )
        if record is not None and record.status is S.AMBIGUOUS:
            return Escalate("needs_attention", "ambiguous_effect", self._evidence(record, None))
        action = retry.on_exhausted if retry is not None else "fail"
        last = record.last_error if record is not None else None
        return Escalate(action, "retries_exhausted", {"effect": key, "error": last})

    def move(
        self,
        record: EffectRecord,
        status: EffectStatus,
        *,
        attempts_delta: int = 0,
        result: JSON = None,
        receipt: str | None = None,
        error: JSON = None,
        deadline: datetime | None = None,
    ) -> EffectRecord:
        if status not in EFFECT_ALLOWED[record.status]:
            raise PerdureError(f"effect {record.key}: {record.status} -> {status} is not allowed")
        move = EffectMove(
            record.tenant_id,
            record.run_id,
            record.key,
            record.status,
            status,
            self.claim.run.fence,
            attempts_delta,
            result,
            receipt,
            error,
            deadline,
        )
        # maybe with other runs' moves; through an outage, as a boundary does
        return ride_out(
            lambda: f"the move of effect {move.key} to {move.status}",
            lambda: self.moves.submit(move, self.clock.now()),
            lambda: self.landed(move),
        )

    def landed(self, write: EffectMove | EffectPlan) -> EffectRecord | None:
        """After a write whose answer was lost: the record it left, when it landed under our
        fence (an intent that is there; a move whose new status is there), else None."""
        run = self.store.get_run(write.tenant_id, write.run_id)
        if run.fence != write.fence:
            return None  # the run is another worker's now: the next try is refused
        key = write.key if isinstance(write, EffectMove) else write.effect.key
        found = self.store.get_effect(write.tenant_id, key)
        if found is None or (isinstance(write, EffectMove) and found.status is not write.status):
            return None
        return found

    def not_sent(self, record: EffectRecord) -> LeaseLostError:
        """An attempt that is not made after all (the lease may be another worker's): its
        record is moved back to ``planned`` with the attempt uncounted, so that whoever runs
        the step next calls without reconciling or waiting for the attempt's deadline; the
        move is refused when the run is another worker's already, and skipped when the
        database cannot be reached (the next owner reconciles). The error to stop with."""
        note: dict[str, JSON] = {
            "class": "not_sent",
            "kind": "lease_in_doubt",
            "message": "the worker was paused or cut off before the call; nothing was sent",
        }
        move = EffectMove(
            record.tenant_id,
            record.run_id,
            record.key,
            S.EXECUTING,
            S.PLANNED,
            self.claim.run.fence,
            -1,
            None,
            None,
            note,
            None,
        )
        with contextlib.suppress(PerdureError):
            self.moves.submit(move, self.clock.now())
        return LeaseLostError(
            f"run {record.run_id}: effect {record.key} was not sent: the lease may have been "
            "taken over while this worker was paused or cut off from the database"
        )

    def in_flight(self, record: EffectRecord) -> datetime | None:
        """The deadline of an earlier execution's attempt that has not passed yet (an
        ``executing`` record found on arrival was left by another fence), else None."""
        if record.status is not S.EXECUTING or record.deadline is None:
            return None
        return record.deadline if self.clock.now() < record.deadline else None

    def _evidence(self, record: EffectRecord, error: JSON) -> dict[str, JSON]:
        return {
            "effect": record.key,
            "target": record.target,
            "operation": record.operation,
            "request": record.request,
            "attempts": record.attempts,
            "error": error if error is not None else record.last_error,
        }
