"""From a step's outcome to the boundary the runtime commits; pure."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from perdure.core.model import RunStatus
from perdure.core.records import (
    ApprovalRequest,
    ApprovalWait,
    ChildrenWait,
    RunError,
    SignalWait,
    StepOutcome,
    TimerWait,
)
from perdure.core.workflow import (
    Done,
    Fail,
    Next,
    Outcome,
    Sleep,
    WaitApproval,
    WaitChildren,
    WaitSignal,
)
from perdure.store.base import Boundary


def next_step_of(outcome: Outcome) -> str | None:
    """The step the same execution continues with (None: it stops here)."""
    return outcome.step if isinstance(outcome, Next) else None


def to_boundary(outcome: Outcome, common: dict[str, Any], now: datetime) -> Boundary:
    """The boundary of a step that ended with ``outcome``; ``common`` carries the step name,
    times, changed state, messages, budget and versions."""
    if isinstance(outcome, Next):
        return Boundary(
            outcome=StepOutcome.NEXT, next_step=outcome.step, status=RunStatus.RUNNING, **common
        )
    if isinstance(outcome, Done):
        return Boundary(
            outcome=StepOutcome.DONE,
            next_step=None,
            status=RunStatus.SUCCEEDED,
            result=outcome.result,
            **common,
        )
    if isinstance(outcome, Fail):
        error = RunError(outcome.reason, outcome.message, common["step"], dict(outcome.details))
        return Boundary(
            outcome=StepOutcome.FAIL,
            next_step=None,
            status=RunStatus.FAILED,
            error=error,
            **common,
        )
    if isinstance(outcome, WaitApproval):
        wait = ApprovalWait(outcome.role, outcome.on_approve, outcome.on_reject)
        return Boundary(
            outcome=StepOutcome.WAIT_APPROVAL,
            next_step=None,
            status=RunStatus.WAITING_APPROVAL,
            waiting=wait,
            approval=ApprovalRequest(wait, outcome.request),
            **common,
        )
    if isinstance(outcome, WaitSignal):
        deadline = None if outcome.timeout is None else now + timedelta(seconds=outcome.timeout)
        return Boundary(
            outcome=StepOutcome.WAIT_SIGNAL,
            next_step=outcome.next,
            status=RunStatus.WAITING_EXTERNAL,
            waiting=SignalWait(outcome.name, outcome.next, outcome.on_timeout, outcome.timeout),
            wake_at=deadline,
            **common,
        )
    if isinstance(outcome, Sleep):
        return Boundary(
            outcome=StepOutcome.SLEEP,
            next_step=outcome.next,
            status=RunStatus.WAITING_EXTERNAL,
            waiting=TimerWait(outcome.next, outcome.until),
            wake_at=outcome.until,
            **common,
        )
    if isinstance(outcome, WaitChildren):
        return Boundary(
            outcome=StepOutcome.WAIT_CHILDREN,
            next_step=outcome.next,
            status=RunStatus.WAITING_EXTERNAL,
            waiting=ChildrenWait(outcome.next, outcome.keys),
            **common,
        )
    raise TypeError(f"not an outcome: {outcome!r}")
