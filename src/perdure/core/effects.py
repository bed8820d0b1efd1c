"""The effect protocol's pure parts: keys, request hashes, records, statuses, error classes.

An effect is one external side effect made inside a step (a refund, an email, a device command).
Its record is written before the call (intent) and after it (outcome), so a crash at any point
leaves evidence of what may have happened. See ``docs/recovery.md`` for the crash windows.

The errors that say how a failure is handled (:class:`EffectError` and its classes) are defined
in :mod:`perdure.core.effect_errors`, below :mod:`perdure.core.failures`, which reads them too;
they are named here as part of the protocol.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from perdure.core.effect_errors import (
    BudgetExhaustedError,
    EffectError,
    ErrorClass,
    PermanentError,
    TransientError,
    UnknownOutcomeError,
)
from perdure.core.errors import InvalidInputError, PerdureError
from perdure.core.failures import describe, http_status, never_sent
from perdure.core.model import JSON
from perdure.core.serde import dumps

__all__ = [
    "EFFECT_ALLOWED",
    "NOT_TAKEN_STATUSES",
    "PERMANENT_KINDS",
    "TRANSIENT_KINDS",
    "BudgetExhaustedError",
    "EffectConflictError",
    "EffectError",
    "EffectMove",
    "EffectPlan",
    "EffectRecord",
    "EffectRejectedError",
    "EffectResult",
    "EffectStatus",
    "ErrorClass",
    "NewEffect",
    "PermanentError",
    "Reconciled",
    "TransientError",
    "UnknownOutcomeError",
    "check_deadline",
    "classify",
    "effect_key",
    "error_json",
    "request_hash",
    "storable",
]


class EffectStatus(StrEnum):
    """Where an effect is. ``executing`` means a call may be in flight or may have happened."""

    PLANNED = "planned"
    EXECUTING = "executing"
    CONFIRMED = "confirmed"
    REJECTED = "rejected"
    AMBIGUOUS = "ambiguous"
    COMPENSATED = "compensated"


E = EffectStatus

EFFECT_ALLOWED: dict[EffectStatus, frozenset[EffectStatus]] = {
    # the call, or never: the run ended (cancelled) before the call was made
    E.PLANNED: frozenset({E.EXECUTING, E.REJECTED}),
    # after a call: the outcome, a retryable failure back to planned, or unknown
    E.EXECUTING: frozenset({E.CONFIRMED, E.REJECTED, E.PLANNED, E.AMBIGUOUS}),
    # a reconcile or a person decides what happened
    E.AMBIGUOUS: frozenset({E.CONFIRMED, E.REJECTED, E.PLANNED}),
    E.CONFIRMED: frozenset({E.COMPENSATED}),
    E.REJECTED: frozenset(),
    E.COMPENSATED: frozenset(),
}
"""``EFFECT_ALLOWED[a]`` is the set of statuses an effect in status ``a`` may move to."""

NOT_TAKEN_STATUSES = frozenset({408, 425, 429, 503})
"""HTTP statuses by which a provider says it did not take the request: safe to send again."""

TRANSIENT_KINDS = frozenset({"timeout", "rate_limited", "dependency_unavailable"})
PERMANENT_KINDS = frozenset({"invalid_request", "permission_denied", "policy_rejected"})


class EffectRejectedError(PerdureError):
    """Raised inside a step by ``ctx.effect`` when the effect was rejected (now or before)."""

    code = "effect_rejected"
    fix = "handle the rejection in the step (catch EffectRejectedError) or fix the request"

    def __init__(self, key: str, error: JSON) -> None:
        kind = error.get("kind") if isinstance(error, dict) else None
        super().__init__(f"effect {key} was rejected ({kind or 'permanent error'})")
        self.key = key
        self.error = error


class EffectConflictError(PerdureError):
    """The same effect key was used with a different request: the code changed what it asks."""

    code = "effect_request_changed"
    fix = (
        "an effect's request must not change between re-executions; give a different request "
        "a different effect name"
    )


def classify(exc: BaseException) -> ErrorClass:
    """The class of an exception raised by an effect's ``execute``.

    :class:`EffectError` subclasses say it themselves. A transport error that proves the
    request was never sent (:func:`perdure.core.failures.never_sent`: a refused connection, a
    DNS failure, a connect timeout, through the SDKs' and httpx's wrappers) is transient. An
    exception carrying an HTTP status (see :func:`perdure.core.failures.http_status`) is
    transient for 408, 425, 429 and 503 (the provider did not take the request), permanent for
    other 4xx (it refused it) and an unknown outcome for other 5xx. Anything else, a read
    timeout or a connection reset or closed after the request went out included, may have
    reached the provider: unknown outcome, so it is reconciled rather than resent. (A model
    call is not judged here: its failures are all transient or rejected, see
    :func:`perdure.runtime.step.model_calls.classified`.)
    """
    if isinstance(exc, EffectError):
        return exc.error_class
    if never_sent(exc):
        return ErrorClass.TRANSIENT
    status = http_status(exc)
    if status in NOT_TAKEN_STATUSES:
        return ErrorClass.TRANSIENT
    if status is not None and 400 <= status <= 499:
        return ErrorClass.PERMANENT
    return ErrorClass.UNKNOWN_OUTCOME


def error_json(exc: BaseException) -> dict[str, JSON]:
    """An exception as recorded in ``last_error``."""
    if isinstance(exc, EffectError):
        return exc.to_json()
    failure = describe(exc)
    kind = "dependency_unavailable" if never_sent(exc) else failure.kind
    return {
        "class": str(classify(exc)),
        "kind": "exception" if kind == "unexpected" else kind,
        "message": failure.message,
        "retry_after": failure.retry_after,
    }


def effect_key(
    tenant_id: str, workflow: str, run_id: str, step_seq: int, step: str, name: str
) -> str:
    """``tenant/workflow/run/<seq>.<step>/name``: stable across retries and re-executions of
    the same step occurrence (``step_seq`` is the step's position in the run)."""
    return f"{tenant_id}/{workflow}/{run_id}/{step_seq}.{step}/{name}"


def check_deadline(name: str, deadline: object) -> None:
    """Refuse an effect deadline that is not a finite number of seconds above 0."""
    if deadline is None:
        return
    ok = isinstance(deadline, int | float) and not isinstance(deadline, bool)
    if not (ok and math.isfinite(deadline) and deadline > 0):  # type: ignore[arg-type,operator]
        raise InvalidInputError(
            f"effect {name!r}: deadline {deadline!r} is not a number of seconds above 0",
            fix="give the call's timeout in seconds, e.g. deadline=30",
        )


def request_hash(request: JSON) -> str:
    """SHA-256 of the request's canonical JSON (sorted keys)."""
    return hashlib.sha256(dumps(request)).hexdigest()


@dataclass(frozen=True, slots=True)
class EffectRecord:
    """The persisted ledger entry of one effect."""

    key: str
    tenant_id: str
    run_id: str
    step: str
    step_seq: int
    name: str
    target: str
    operation: str
    request_hash: str
    request: JSON
    status: EffectStatus
    attempts: int
    result: JSON
    receipt: str | None
    last_error: JSON
    compensator: str | None
    resolution: JSON
    created_at: datetime
    updated_at: datetime
    deadline: datetime | None = None
    """While ``executing``: when the current attempt's call must have given up (None: the
    effect has no deadline, or the attempt was made before deadlines were recorded)."""

    def replayed(self) -> JSON:
        """What a replay of this settled effect returns: its recorded result, or
        :class:`EffectRejectedError` when it was rejected."""
        if self.status is EffectStatus.REJECTED:
            raise EffectRejectedError(self.key, self.last_error)
        return self.result


@dataclass(frozen=True, slots=True)
class NewEffect:
    """An intent to record before the first call."""

    key: str
    step: str
    step_seq: int
    name: str
    target: str
    operation: str
    request_hash: str
    request: JSON
    compensator: str | None = None


@dataclass(frozen=True, slots=True)
class EffectPlan:
    """The intent of a new effect, recorded by the worker running its step under the run's
    fence: what :meth:`~perdure.store.base.Store.plan_effect` is given, as one item of a group
    of intents from different runs (:meth:`~perdure.store.base.Store.plan_effects`).

    ``executing``: the intent is recorded as the first attempt already under way (status
    ``executing``, attempts 1, the attempt's ``deadline``), with the events of both moves, for a
    call made right after it with nothing in between. A process that stops after such an
    intent may or may not have sent the call, as one stopped during it: the runner folds the
    two writes only for an effect whose reconciler can tell (see ``docs/recovery.md``)."""

    tenant_id: str
    run_id: str
    fence: int
    effect: NewEffect
    executing: bool = False
    deadline: datetime | None = None


@dataclass(frozen=True, slots=True)
class EffectMove:
    """One effect's status change by the worker running its step, under the run's fence: what
    :meth:`~perdure.store.base.Store.update_effect` is given, as one item of a group of such
    changes from different runs (:meth:`~perdure.store.base.Store.move_effects`).

    The effect moves from ``expected_status`` to ``status`` (the caller checked
    :data:`EFFECT_ALLOWED`), adding ``attempts_delta`` to its attempts and keeping the given
    result, receipt and last error (None keeps the old value); a move to ``executing`` records
    ``deadline``, the attempt's own. ``run_id`` is the run the effect belongs to: a group takes
    its runs' locks in (tenant, run) order, as every writer of several runs does."""

    tenant_id: str
    run_id: str
    key: str
    expected_status: EffectStatus
    status: EffectStatus
    fence: int
    attempts_delta: int = 0
    result: JSON = None
    receipt: str | None = None
    error: JSON = None
    deadline: datetime | None = None


@dataclass(frozen=True, slots=True)
class EffectResult:
    """What an ``execute`` callable may return to record a receipt (a provider's resource or
    transaction id) next to the result. Returning a plain JSON value records no receipt."""

    result: JSON = None
    receipt: str | None = None


@dataclass(frozen=True, slots=True)
class Reconciled:
    """What a ``reconcile`` callable found at the provider for an effect key."""

    status: str
    result: JSON = None
    receipt: str | None = None

    @classmethod
    def confirmed(cls, result: JSON = None, receipt: str | None = None) -> Reconciled:
        """The provider applied the request; ``result``/``receipt`` are what it returned."""
        return cls("confirmed", result, receipt)

    @classmethod
    def not_found(cls) -> Reconciled:
        """The provider never applied the request: it is safe to execute it (same key)."""
        return cls("not_found")

    @classmethod
    def unknown(cls) -> Reconciled:
        """The provider cannot tell yet: the effect becomes ambiguous and a person decides."""
        return cls("unknown")


def storable(value: Any) -> JSON:
    """``value`` if it can be stored as JSON, else its text (recorded, never lost)."""
    try:
        dumps(value)
    except InvalidInputError:
        return {"unstorable_result": repr(value)[:2000]}
    return value
