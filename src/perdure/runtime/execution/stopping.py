"""How an execution stops: giving the lease up on shutdown, sleeping until a retry, handing
the run to a person, failing it, finishing a cancel, quarantining it. Held by an
:class:`~perdure.runtime.execution.execution.Execution`; every stop moves the run under the
execution's fence, or lets go when the run is no longer its own."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from perdure.core import transitions
from perdure.core.clock import Clock
from perdure.core.errors import LeaseLostError, RunClosedError, StaleStateError
from perdure.core.model import JSON, Run, RunStatus
from perdure.core.records import RunError, StopReason
from perdure.core.settling import doubt_evidence, in_doubt
from perdure.core.signals import Escalate, RetryLater
from perdure.core.workflow import Workflow
from perdure.runtime.execution.claim import Claim
from perdure.runtime.execution.committer import Committer
from perdure.runtime.execution.compensation import Compensation
from perdure.runtime.execution.services import SUGGESTIONS, Stopped
from perdure.runtime.execution.spawner import request_cancel_children
from perdure.runtime.leases import Heartbeat
from perdure.store.base import Store
from perdure.store.objects.base import ObjectStoreError

OBJECT_STORE_ATTEMPTS = 5
"""How many times in a row a step may meet a failing artifact store before a person looks."""


class Stops:
    """The stops of one execution (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        heartbeat: Heartbeat,
        claim: Claim,
        committer: Committer,
        compensation: Compensation,
        workflow: Workflow[Any],
    ) -> None:
        self.store = store
        self.clock = clock
        self.heartbeat = heartbeat
        self.claim = claim
        self.committer = committer
        self.compensation = compensation
        self.workflow = workflow

    @property
    def run(self) -> Run:
        """The claimed run as this execution last knows it."""
        return self.claim.run

    def current(self) -> Run:
        return self.store.get_run(self.run.tenant_id, self.run.run_id)

    def release(self) -> Stopped:
        run = self.run
        now = self.clock.now()
        self.store.release(run.tenant_id, run.run_id, self.heartbeat.owner, run.fence, now)
        return Stopped(StopReason.RELEASED, run.run_id)

    def defer(self, wait: RetryLater, step_attempts: int) -> Stopped:
        """Sleep durably until the retry is due (``step_attempts`` made of the step so far,
        unless the wait says); the lease is released meanwhile."""
        self.committer.flush()
        attempts = step_attempts if wait.step_attempts is None else wait.step_attempts
        self.store.defer(
            self.run.tenant_id,
            self.run.run_id,
            fence=self.run.fence,
            expected_version=self.claim.version,
            wake_at=wait.at,
            step_attempts=attempts,
            now=self.clock.now(),
            data=wait.error,
        )
        return Stopped(StopReason.RETRY_SCHEDULED, self.run.run_id)

    def escalate(self, esc: Escalate, step: str, completed: int) -> Stopped:
        """Stop before (or instead of) a step, after ``completed`` steps: hand the run to a
        person, or fail it."""
        if esc.action == "needs_attention":
            return self.needs_attention(esc, step, completed)
        self.committer.flush()
        unresolved = self.compensation.all()
        error = RunError(
            esc.reason,
            f"{esc.reason} in step {step!r}",
            step,
            dict(esc.evidence),
            unresolved_compensations=tuple(unresolved),
        )
        return self._close(self.current(), RunStatus.FAILED, error, StopReason.ENDED)

    def needs_attention(self, esc: Escalate, step: str, completed: int) -> Stopped:
        """Hand the run to a person with why, where, what to do, and the evidence (``completed``
        steps were committed)."""
        self.committer.flush()
        error = RunError(
            esc.reason,
            esc.message or f"{esc.reason} in step {step!r}",
            step,
            dict(esc.evidence),
            suggested_action=SUGGESTIONS.get(esc.reason, "inspect the evidence, then resume"),
            resume_at=step,
            completed_steps=completed,
        )
        return self._close(
            self.current(), RunStatus.NEEDS_ATTENTION, error, StopReason.NEEDS_ATTENTION
        )

    def after_stale(self) -> Stopped:
        """The run moved on under us: finish a cancel if it is ours to finish, else let go."""
        current = self.current()
        if current.status is RunStatus.CANCEL_REQUESTED and current.fence == self.run.fence:
            self.claim.adopt(current)
            return self.finish_cancel()
        return Stopped(StopReason.LOST, current.run_id)

    def object_store_failed(
        self, exc: ObjectStoreError, step_attempts: int, completed: int
    ) -> Stopped:
        """The artifact store failed while the database works: sleep durably and run the step
        again (after 2, 4, 8, 16 seconds), and after :data:`OBJECT_STORE_ATTEMPTS` failures in a
        row hand the run to a person with the error as evidence."""
        attempts = step_attempts + 1
        error: dict[str, JSON] = {
            "kind": exc.code,
            "message": exc.message,
            "attempts": attempts,
            "step": self.run.next_step,
        }
        if attempts >= OBJECT_STORE_ATTEMPTS:
            esc = Escalate("needs_attention", exc.code, error, exc.message)
            return self.needs_attention(esc, self.run.next_step or "", completed)
        at = self.clock.now() + timedelta(seconds=2**attempts)
        return self.defer(RetryLater(at, error, attempts), step_attempts)

    def in_doubt(self) -> bool:
        """True when the run has effects whose call may have happened with no recorded
        outcome (a cancel must settle them first)."""
        return bool(in_doubt(self.compensation.effects()))

    def finish_cancel(self, completed: int = 0) -> Stopped:
        """Pass the cancel on to the children and settle every effect (not sent: rejected;
        confirmed: compensated newest first, or kept when it has no compensator), then end the
        run CANCELLED. An effect nobody can tell about sends the run to a person instead
        (NEEDS_ATTENTION, ``ambiguous_effect``): the run never ends pretending it knows."""
        request_cancel_children(self.store, self.clock, self.run, "parent cancelled")
        settled = self.compensation.settle()
        if settled.doubt:
            evidence = doubt_evidence(settled.doubt)
            message = (
                "the run was cancelled while an effect's outcome is unknown; it ends once "
                "a person resolves the effect"
            )
            esc = Escalate("needs_attention", "ambiguous_effect", evidence, message)
            return self.needs_attention(esc, self.run.next_step or "", completed)
        run = self.current()
        deleted = None
        if self.workflow.delete_messages_on_cancel:
            deleted = self.store.delete_run_messages(run.tenant_id, run.run_id)
        error = RunError(
            "cancelled",
            "the run was cancelled",
            run.next_step,
            unresolved_compensations=settled.unresolved,
            kept_effects=settled.kept,
            deleted_messages=deleted,
        )
        return self._close(run, RunStatus.CANCELLED, error, StopReason.CANCELLED)

    def quarantine(
        self, reason: str, message: str, evidence: dict[str, JSON] | None = None
    ) -> Stopped:
        """Park the run as QUARANTINED with the evidence; the worker goes on with others."""
        run = self.current()
        error = RunError(reason, message, run.next_step, dict(evidence or {}))
        return self._close(run, RunStatus.QUARANTINED, error, StopReason.QUARANTINED)

    def _close(self, run: Run, status: RunStatus, error: RunError, why: StopReason) -> Stopped:
        """Move ``run`` (as last read) to ``status`` under our fence and give the lease up.
        When the run is no longer ours (another fence, or it moved on), let go instead."""
        if run.fence != self.run.fence or not transitions.allowed(run.status, status):
            return Stopped(StopReason.LOST, run.run_id)
        try:
            self.store.set_status(
                run.tenant_id,
                run.run_id,
                expected_status=run.status,
                expected_version=run.state_version,
                status=status,
                fence=self.run.fence,
                now=self.clock.now(),
                data=error.to_json(),
                release_lease=True,
            )
        except (LeaseLostError, RunClosedError, StaleStateError):
            return Stopped(StopReason.LOST, run.run_id)
        return Stopped(why, run.run_id, status)
