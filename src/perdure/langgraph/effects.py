"""LangGraph tool calls as perdure effects of their thread's run.

A LangGraph node that runs again (after an interrupt, after a crash, on a retry) calls its
tools again: that is LangGraph's model. An effect tool
(:func:`~perdure.langgraph.effect_tool`) goes through :class:`ToolEffects` instead, which
follows the effect protocol perdure's own steps follow (``docs/recovery.md``), on the same
ledger: the intent is recorded before the call (``planned``, then ``executing``), the outcome
after it (``confirmed`` with the result, or ``rejected``), and every later arrival at the same
key asks the recovery gate (:func:`perdure.core.recovery.decide`) first — a recorded outcome
is returned without a call, a call in doubt (the process died during it) is reconciled with
the provider when a reconciler is given, and otherwise stops for a person
(:class:`~perdure.core.errors.ToolEffectAmbiguousError`), never called twice.

Differences from a step's effects, because a LangGraph thread is not a perdure run's step
loop: attempts are not budgeted here (LangGraph's node ``retry_policy`` decides whether a
failed call runs again; a failure that did not reach the provider leaves the effect
``planned`` for it), a tool that pauses for a person (``interrupt()`` raises) puts its effect
back to ``planned`` without counting an attempt, and a call in doubt raises instead of moving
the run to NEEDS_ATTENTION (the thread's run stays RUNNING; the effect is ``ambiguous`` in
``perdure effects``, resolved with ``perdure effects resolve``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from langgraph.errors import GraphBubbleUp

from perdure.core.clock import Clock
from perdure.core.effect_calls import Reconcile
from perdure.core.effects import (
    EFFECT_ALLOWED,
    EffectConflictError,
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
from perdure.core.errors import InvalidInputError, LeaseLostError, PerdureError, RunClosedError
from perdure.core.errors import ToolEffectAmbiguousError as Ambiguous
from perdure.core.graph import GRAPH_WORKFLOW, GraphToolCall
from perdure.core.model import JSON
from perdure.core.recovery import Action, Checkpoint, EffectEvidence, decide
from perdure.runtime.crashpoints import crashpoint
from perdure.store.base import Store

S = EffectStatus

Resolve = Callable[[Any], Any]
"""Turns what a callable returned into its value (an awaitable is awaited)."""


class ToolEffects:
    """Runs tool calls of LangGraph threads as effects in one store."""

    def __init__(
        self, store: Store, clock: Clock, still_held: Callable[[], bool] | None = None
    ) -> None:
        self.store = store
        self.clock = clock
        self.still_held = still_held
        """Asked just before every call: False when the invocation's hold may have been taken
        over (its lease ran out by the clock, or this process missed its beats); the call is
        then not made. None: an unheld invocation, which no takeover can stop."""

    def run(
        self,
        call: GraphToolCall,
        execute: Callable[[str], Any],
        reconcile: Reconcile | None,
        resolve: Resolve,
    ) -> JSON:
        """The tool call's result: recorded, reconciled, or from ``execute(key)`` (made at
        most once per key while its outcome is known)."""
        new = call.effect
        record = self.store.get_effect(call.tenant_id, new.key)
        if record is not None and record.request_hash != new.request_hash:
            raise EffectConflictError(
                f"tool call {new.key} was recorded with other arguments "
                f"({record.request_hash[:12]} != {new.request_hash[:12]})"
            )
        reconciled = False
        while True:
            attempts = 0 if record is None else record.attempts
            evidence = EffectEvidence(
                new.key,
                None if record is None else str(record.status),
                attempts,
                attempts + 1,  # no budget here: the node's retry policy decides
                reconcile is not None and not reconciled,
            )
            action = decide(_checkpoint(call), evidence)
            if action is Action.ADVANCE and record is not None:
                return record.replayed()
            if action is Action.RECONCILE and record is not None and reconcile is not None:
                record = self._reconcile(call, record, reconcile, resolve, recovering=True)
                reconciled = True
                if record.status is S.CONFIRMED:
                    return record.result
                continue
            if action is Action.EXECUTE:
                return self._execute(call, record, execute, reconcile, resolve)
            raise self._stopped(call, record)

    def _execute(
        self,
        call: GraphToolCall,
        record: EffectRecord | None,
        execute: Callable[[str], Any],
        reconcile: Reconcile | None,
        resolve: Resolve,
    ) -> JSON:
        new = call.effect
        crashpoint("before_intent", new.name)
        if record is None and reconcile is not None:
            # one write: with a reconciler, a stop right after the intent is asked about as a
            # stop during the call is (docs/recovery.md), as a step's effects do
            plan = EffectPlan(call.tenant_id, call.run_id, call.fence, new, executing=True)
            (planned,) = self.store.plan_effects([plan], self.clock.now())
            if isinstance(planned, PerdureError):
                raise planned
            record = planned
        elif record is None:
            record = self.store.plan_effect(
                call.tenant_id, call.run_id, call.fence, new, self.clock.now()
            )
        crashpoint("after_intent", new.name)
        if record.status is not S.EXECUTING:
            record = self._move(call, record, S.EXECUTING, attempts_delta=1)
        if self.still_held is not None and not self.still_held():
            # paused or cut off past the hold's lease: another invocation may have taken the
            # thread and made this call; the effect goes back to planned, nothing is sent
            self._move(call, record, S.PLANNED, attempts_delta=-1)
            raise LeaseLostError(
                f"tool call {new.key} is not made: the hold on thread {call.thread_id} may "
                "have been taken over while this process was paused"
            )
        try:
            out = resolve(execute(new.key))
        except GraphBubbleUp:
            # interrupt(): the tool pauses for a person before acting; it runs again on resume
            self._move(call, record, S.PLANNED, attempts_delta=-1)
            raise
        except Exception as exc:
            crashpoint("after_call", new.name)
            return self._failed(call, record, exc, reconcile, resolve)
        crashpoint("after_call", new.name)
        kept = storable(out)
        self._move(call, record, S.CONFIRMED, result=kept)
        crashpoint("after_outcome", new.name)
        if kept is not out:
            raise InvalidInputError(
                f"tool call {new.key} returned a value that is not JSON; it was recorded as text",
                fix="return JSON-compatible data (str, numbers, lists, dicts) from the tool",
            )
        return out

    def _failed(
        self,
        call: GraphToolCall,
        record: EffectRecord,
        exc: Exception,
        reconcile: Reconcile | None,
        resolve: Resolve,
    ) -> JSON:
        error = error_json(exc)
        kind = classify(exc)
        if kind is ErrorClass.PERMANENT:
            self._move(call, record, S.REJECTED, error=error)
            raise EffectRejectedError(record.key, error) from exc
        if kind is ErrorClass.UNKNOWN_OUTCOME:
            if reconcile is None:
                self._move(call, record, S.AMBIGUOUS, error=error)
                raise _ambiguous(record.key, "its outcome is unknown") from exc
            found = self._reconcile(call, record, reconcile, resolve, recovering=False)
            if found.status is S.CONFIRMED:
                return found.result
            raise exc  # the provider did not act: the effect is planned for the next try
        self._move(call, record, S.PLANNED, error=error)
        raise exc  # it did not reach the provider: the node's retry policy may try again

    def _reconcile(
        self,
        call: GraphToolCall,
        record: EffectRecord,
        reconcile: Reconcile,
        resolve: Resolve,
        *,
        recovering: bool,
    ) -> EffectRecord:
        """Ask the provider: confirmed -> confirmed, not found -> planned (the interrupted
        attempt not counted when recovering), unknown -> ambiguous, and raise."""
        error: JSON = None
        try:
            found = resolve(reconcile(record.request, record.key))
        except Exception as exc:
            found, error = Reconciled.unknown(), error_json(exc)
        if not isinstance(found, Reconciled):
            found = Reconciled.unknown()
        if found.status == "confirmed":
            result = storable(found.result)
            return self._move(call, record, S.CONFIRMED, result=result, receipt=found.receipt)
        if found.status == "not_found":
            note: JSON = {"class": "reconciled", "kind": "not_found", "message": "not at provider"}
            return self._move(call, record, S.PLANNED, error=note, attempts_delta=-int(recovering))
        if record.status is not S.AMBIGUOUS:
            self._move(call, record, S.AMBIGUOUS, error=error)
        raise _ambiguous(record.key, "its reconciler could not tell what the provider did")

    def _stopped(self, call: GraphToolCall, record: EffectRecord | None) -> PerdureError:
        if record is not None and record.status is S.EXECUTING:
            record = self._move(
                call,
                record,
                S.AMBIGUOUS,
                error={
                    "class": "unknown_outcome",
                    "kind": "interrupted",
                    "message": "the process stopped during the call",
                },
            )
        if record is not None and record.status is S.AMBIGUOUS:
            return _ambiguous(record.key, "a process stopped during its call")
        return RunClosedError(f"thread {call.thread_id}'s run is {call.status}; no call is made")

    def _move(
        self,
        call: GraphToolCall,
        record: EffectRecord,
        status: EffectStatus,
        *,
        attempts_delta: int = 0,
        result: JSON = None,
        receipt: str | None = None,
        error: JSON = None,
    ) -> EffectRecord:
        if status not in EFFECT_ALLOWED[record.status]:
            raise PerdureError(f"effect {record.key}: {record.status} -> {status} is not allowed")
        now: datetime = self.clock.now()
        return self.store.update_effect(
            call.tenant_id,
            record.key,
            expected_status=record.status,
            status=status,
            fence=call.fence,
            now=now,
            attempts_delta=attempts_delta,
            result=result,
            receipt=receipt,
            error=error,
        )


def _checkpoint(call: GraphToolCall) -> Checkpoint:
    # a thread's run has no workflow version or state schema of perdure's (its release says
    # 0): the gate reads its status and the effect's evidence
    return Checkpoint(call.run_id, call.tenant_id, GRAPH_WORKFLOW, 1, 1, str(call.status), "sync")


def _ambiguous(key: str, why: str) -> Ambiguous:
    return Ambiguous(f"tool call {key} is not called again: {why}")
