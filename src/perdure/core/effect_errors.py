"""The errors an effect's call (or a step) raises to say how its failure is handled, and the
classes they fall in; pure.

They sit below :mod:`perdure.core.effects` and :mod:`perdure.core.failures`, which both read
them: ``effects`` names them too, as part of the effect protocol.
"""

from __future__ import annotations

from enum import StrEnum

from perdure.core.errors import PerdureError
from perdure.core.values import JSON


class ErrorClass(StrEnum):
    """How a failure is handled: retried, recorded as rejected, escalated, or reconciled."""

    TRANSIENT = "transient"
    PERMANENT = "permanent"
    BUDGET_EXHAUSTED = "budget_exhausted"
    UNKNOWN_OUTCOME = "unknown_outcome"


class EffectError(PerdureError):
    """Raised by an ``execute`` callable (or a step) to say how a failure must be handled.

    ``kind`` is a stable code such as ``rate_limited``; ``retry_after`` (seconds) is honoured by
    retry policies when the provider gave one.
    """

    error_class: ErrorClass = ErrorClass.UNKNOWN_OUTCOME
    code = "effect_error"

    def __init__(self, kind: str, message: str = "", *, retry_after: float | None = None) -> None:
        super().__init__(message or kind)
        self.kind = kind
        self.retry_after = retry_after

    def to_json(self) -> dict[str, JSON]:
        """The error as recorded on the effect (``last_error``)."""
        return {
            "class": str(self.error_class),
            "kind": self.kind,
            "message": self.message,
            "retry_after": self.retry_after,
        }


class TransientError(EffectError):
    """The request certainly did not take effect and may succeed later (timeout before
    sending, rate limited, dependency unavailable): retried by policy."""

    error_class = ErrorClass.TRANSIENT
    code = "transient_error"


class PermanentError(EffectError):
    """The provider refused the request (invalid, not permitted, against policy): recorded as
    ``rejected``, never retried."""

    error_class = ErrorClass.PERMANENT
    code = "permanent_error"


class UnknownOutcomeError(EffectError):
    """The request may or may not have taken effect: reconciled, never resent blindly."""

    error_class = ErrorClass.UNKNOWN_OUTCOME
    code = "unknown_outcome"


class BudgetExhaustedError(EffectError):
    """A budget (attempts, time, money) ran out: escalated by policy, never retried."""

    error_class = ErrorClass.BUDGET_EXHAUSTED
    code = "budget_exhausted"
