"""From a step's outcome to the boundary the runtime commits; pure."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from perdure.core.model import JSON, RunStatus
from perdure.core.workflow import Done, Fail, Next, Outcome, Sleep, WaitApproval, WaitSignal
from perdure.store.base import Boundary


def next_step_of(outcome: Outcome) -> str | None:
    """The step the same execution continues with (None: it stops here)."""
    return outcome.step if isinstance(outcome, Next) else None


def to_boundary(outcome: Outcome, common: dict[str, Any], now: datetime) -> Boundary:
    """The boundary of a step that ended with ``outcome``; ``common`` carries the step name,
    times, changed state, messages, budget and versions."""
    if isinstance(outcome, Next):
        return Boundary(outcome="next", next_step=outcome.step, status=RunStatus.RUNNING, **common)
    if isinstance(outcome, Done):
        return Boundary(
            outcome="done",
            next_step=None,
            status=RunStatus.SUCCEEDED,
            result=outcome.result,
            **common,
        )
    if isinstance(outcome, Fail):
        return Boundary(
            outcome="fail",
            next_step=None,
            status=RunStatus.FAILED,
            error={**outcome.to_json(), "step": common["step"]},
            **common,
        )
    if isinstance(outcome, WaitApproval):
        waiting: dict[str, JSON] = {
            "kind": "approval",
            "role": outcome.role,
            "on_approve": outcome.on_approve,
            "on_reject": outcome.on_reject,
        }
        return Boundary(
            outcome="wait_approval",
            next_step=None,
            status=RunStatus.WAITING_APPROVAL,
            waiting=waiting,
            approval={**waiting, "request": outcome.request},
            **common,
        )
    if isinstance(outcome, WaitSignal):
        deadline = None if outcome.timeout is None else now + timedelta(seconds=outcome.timeout)
        waiting = {
            "kind": "signal",
            "name": outcome.name,
            "next": outcome.next,
            "on_timeout": outcome.on_timeout,
            "timeout": outcome.timeout,
        }
        return Boundary(
            outcome="wait_signal",
            next_step=outcome.next,
            status=RunStatus.WAITING_EXTERNAL,
            waiting=waiting,
            wake_at=deadline,
            **common,
        )
    if isinstance(outcome, Sleep):
        waiting = {"kind": "timer", "next": outcome.next, "until": outcome.until.isoformat()}
        return Boundary(
            outcome="sleep",
            next_step=outcome.next,
            status=RunStatus.WAITING_EXTERNAL,
            waiting=waiting,
            wake_at=outcome.until,
            **common,
        )
    raise TypeError(f"not an outcome: {outcome!r}")
