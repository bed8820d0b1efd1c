"""Calling one step: the step function, plain or ``async def``, and what its outcome or its
exception means for the run (a retry of the step, a person, a failure, a failure step)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from perdure.core.clock import Clock
from perdure.core.effects import EffectRejectedError
from perdure.core.errors import LeaseLostError, PerdureError, RunClosedError, StoreError
from perdure.core.failures import describe
from perdure.core.model import JSON
from perdure.core.signals import Escalate, RetryLater
from perdure.core.workflow import (
    ESCALATIONS,
    Done,
    Fail,
    Next,
    Outcome,
    Sleep,
    StepDef,
    WaitApproval,
    WaitChildren,
    WaitSignal,
    Workflow,
    continuations,
)
from perdure.runtime.aio import Bridge
from perdure.runtime.crashpoints import fault
from perdure.runtime.execution.claim import Claim
from perdure.runtime.execution.host import ExecutionHost
from perdure.runtime.step.context import Context


class StepCaller:
    """Calls the steps of one execution; see the module docstring."""

    def __init__(
        self,
        workflow: Workflow[Any],
        clock: Clock,
        claim: Claim,
        host: ExecutionHost,
        bridge: Bridge,
    ) -> None:
        self.workflow = workflow
        self.clock = clock
        self.claim = claim
        self.host = host
        self.bridge = bridge

    def call(self, step: StepDef, ctx: Context, state: Any, step_attempts: int) -> Outcome:
        """Call the step function and turn anything unexpected into a typed outcome.

        Raises :class:`RetryLater` (sleep, then run the step again) and :class:`Escalate` with
        action ``needs_attention``; other escalations become a failure or the failure step.
        """
        try:
            fault("hold", step.name)
            if fault("timeout", step.name):
                raise TimeoutError(f"fault drill: the model call in step {step.name!r} timed out")
            returned = step(ctx, state)
            # an async def step returns a coroutine: it runs on the event loop
            outcome = self.bridge.run(returned) if isinstance(returned, Coroutine) else returned
        except Escalate as esc:
            return self._escalated(esc, step.name)
        except (StoreError, LeaseLostError, RunClosedError):
            # the database failed, or the run is no longer ours: not the step's fault; the
            # execution lets go at once (a later claim continues from the last boundary)
            raise
        except EffectRejectedError as exc:
            # the provider refused the request for good: a business outcome of the run
            return Fail(exc.code, exc.message, {"fix": exc.fix} if exc.fix else {})
        except Exception as exc:
            return self._step_failed(step, exc, step_attempts)
        if not isinstance(
            outcome, Next | Done | Fail | WaitApproval | WaitSignal | Sleep | WaitChildren
        ):
            raise _attention(
                "invalid_outcome",
                step.name,
                f"step {step.name!r} returned {type(outcome).__name__}; return goto(...), "
                "done(...), fail(...), wait_for_approval(...), wait_for_signal(...) or sleep(...)",
            )
        stray = [s for s in continuations(outcome) if s not in step.next]
        if stray:
            raise _attention(
                "undeclared_transition",
                step.name,
                f"step {step.name!r} continues with {stray}, which is not in its next= list",
            )
        return outcome

    def _step_failed(self, step: StepDef, exc: Exception, step_attempts: int) -> Outcome:
        """An exception left the step. Retry the step under its policy when the failure may
        pass (see :mod:`perdure.core.failures`); when it may not, or the policy is used up, the
        run goes to a person (NEEDS_ATTENTION, resumable after a fix) unless the policy's
        ``on_exhausted`` says otherwise. The run never fails for good unless the workflow says
        so."""
        now = self.clock.now()
        failure = describe(exc, now)
        attempt = step_attempts + 1
        evidence: dict[str, JSON] = {
            "step": step.name,
            "attempts": attempt,
            "error": failure.to_json(),
            "traceback": _traceback_of(exc),
        }
        if isinstance(exc, PerdureError) and exc.fix:
            evidence["fix"] = exc.fix
        policy = step.retry
        retryable = policy is not None and policy.retries(
            exc, failure.kind, transient=failure.transient
        )
        if policy is not None and retryable:
            at = policy.next_try(
                attempt=attempt,
                kind=failure.kind,
                first_failure=self.claim.run.retry_since or now,
                now=now,
                rng=self.host.effects.outcomes.rng,
                retry_after=failure.retry_after,
                retryable=True,
            )
            if at is not None:
                raise RetryLater(at, {"step": step.name, **failure.to_json()}, attempt)
            exhausted = Escalate(
                policy.on_exhausted, "retries_exhausted", evidence, failure.message
            )
            return self._escalated(exhausted, step.name)
        reason = exc.code if isinstance(exc, PerdureError) else "step_raised"
        raise Escalate("needs_attention", reason, evidence, failure.message)

    def _escalated(self, esc: Escalate, step: str) -> Outcome:
        """Turn an escalation into an outcome: fail, or go to the declared failure step."""
        if esc.action == "needs_attention":
            raise esc
        message = esc.message or f"{esc.reason} in step {step!r}"
        if esc.action in ESCALATIONS or esc.action not in self.workflow.steps:
            details = dict(esc.evidence)
            if esc.action not in ESCALATIONS:
                details["invalid_failure_step"] = esc.action
            return Fail(esc.reason, message, details)
        return Next(esc.action)


def _attention(reason: str, step: str, message: str) -> Escalate:
    """A mistake in the workflow's code: a person fixes it and resumes the run."""
    return Escalate("needs_attention", reason, {"step": step}, message)


def _traceback_of(exc: Exception) -> list[str]:
    """The last lines of ``exc``'s traceback (the module is imported on the first failure, not
    by every process that starts)."""
    import traceback  # deferred: a start-up cost only failures need

    return traceback.format_exception(exc)[-5:]
