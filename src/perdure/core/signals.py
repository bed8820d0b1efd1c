"""Control-flow signals that leave a step early. They are not errors (they derive from
``BaseException`` so a step's ``except Exception`` cannot swallow them by accident)."""

from __future__ import annotations

from datetime import datetime

from perdure.core.model import JSON


class ControlFlow(BaseException):
    """Root of the control-flow signals."""


class RetryLater(ControlFlow):
    """Sleep durably until ``at``, then run the current step again (same effect keys).

    ``step_attempts`` is the new count of failed attempts of the step (None: unchanged, as
    when one effect inside the step retries under its own policy)."""

    def __init__(self, at: datetime, error: JSON, step_attempts: int | None = None) -> None:
        super().__init__(f"retry at {at.isoformat()}")
        self.at = at
        self.error = error
        self.step_attempts = step_attempts


class Escalate(ControlFlow):
    """Stop the step and hand the run on: ``action`` is ``fail``, ``needs_attention`` or the
    name of a declared failure step to go to. ``evidence`` is kept on the run."""

    def __init__(
        self, action: str, reason: str, evidence: dict[str, JSON], message: str = ""
    ) -> None:
        super().__init__(f"{reason}: {action}")
        self.action = action
        self.reason = reason
        self.evidence = evidence
        self.message = message


class Cancelled(ControlFlow):
    """Raised by ``ctx.check_cancelled()``: the run was cancelled; leave the step now."""
