"""Child runs from the parent's side: starting one (``ctx.spawn``), checking a wait for
children before it commits, and passing a cancel on to the children.

A child is a run of its own: its own run id and thread (derived from the parent's run id and
the key, so it never queues behind its parent on the parent's thread), in the parent's tenant,
with the parent's commit mode and release ids, and a budget of its own (given, the child
workflow's default, or a share of what the parent has left). It is created at once, under an
idempotency key derived from the parent and the key: a parent step that runs again after a
crash finds the child it started instead of starting a second one. The child never sees the
parent's state; the parent reads each child's outcome with ``ctx.children`` and combines
results into its own state itself (``ctx.merge_children``, through the declared reducers).
"""

from __future__ import annotations

from typing import Any

from perdure.core import transitions
from perdure.core.budget import Budget, BudgetState
from perdure.core.children import (
    ChildRecord,
    child_idempotency_key,
    child_key,
    child_run_id,
)
from perdure.core.clock import Clock
from perdure.core.errors import (
    ChildRunError,
    InvalidInputError,
    PerdureError,
    RunClosedError,
    StaleStateError,
)
from perdure.core.model import Release, Run, RunStatus
from perdure.core.seal import Keyring, seal_state
from perdure.core.serde import Limits
from perdure.core.workflow import Fail, Outcome, WaitChildren, Workflow
from perdure.runtime.telemetry import current_trace
from perdure.store.base import NewRun, Store


class Spawner:
    """Starts the children of one claimed run (one per execution)."""

    def __init__(self, store: Store, clock: Clock, keyring: Keyring | None, limits: Limits) -> None:
        self.store = store
        self.clock = clock
        self.keyring = keyring
        self.limits = limits

    def spawn(
        self,
        parent: Run,
        budget: BudgetState | None,
        wf: Workflow[Any],
        input: Any,
        key: str,
        child_budget: Budget | None,
        share: float | None,
    ) -> ChildRecord:
        """Create (or find) the child ``key`` of ``parent``; see the module docstring."""
        child_key(key)
        run_id = child_run_id(parent.tenant_id, parent.run_id, key)
        state = wf.codec.coerce({} if input is None else input)
        fields = wf.codec.to_fields(state)
        try:
            self.limits.check(fields)
        except PerdureError as exc:
            raise InvalidInputError(exc.message, fix=exc.fix) from exc
        sealed = seal_state(self.keyring, parent.tenant_id, run_id, fields, previous=None, steps=0)
        release = Release(
            wf.version,
            wf.state_schema,
            parent.release.durability,
            code=parent.release.code,
            prompt=parent.release.prompt,
            model=wf.model,
        )
        new = NewRun(
            run_id=run_id,
            tenant_id=parent.tenant_id,
            thread_id=run_id,
            workflow=wf.name,
            start_step=wf.start,
            release=release,
            state=sealed.fields,
            state_seal=sealed.seal,
            idempotency_key=child_idempotency_key(parent.run_id, key),
            budget=_budget(budget, child_budget or wf.budget, share),
            parent_run_id=parent.run_id,
            child_key=key,
            trace=current_trace(),  # the child's spans continue the step's trace
        )
        run, _ = self.store.create_run(new, self.clock.now())
        if run.workflow != wf.name:
            raise ChildRunError(
                f"child {key!r} of run {parent.run_id} is a run of {run.workflow}, not {wf.name}"
            )
        return ChildRecord(key, run.run_id, run.workflow, run.status, run.result, run.error)


def _budget(
    parent: BudgetState | None, own: Budget | None, share: float | None
) -> BudgetState | None:
    """The child's budget: ``share`` (0..1] of each limit the parent has left, else its own."""
    if share is None:
        return None if own is None else own.start()
    if not 0 < share <= 1:
        raise InvalidInputError(f"share {share!r} is not in (0, 1]", fix="pass e.g. share=0.25")
    if parent is None:
        return None if own is None else own.start()
    left = parent.remaining()
    steps, cost, tokens = left.get("steps"), left.get("cost"), left.get("tokens")
    return Budget(
        steps=None if steps is None else max(1, int(steps * share)),
        cost=None if cost is None else float(cost) * share,
        tokens=None if tokens is None else int(tokens * share),
        on_exhausted=own.on_exhausted if own is not None else parent.on_exhausted,
    ).start()


def checked_wait(store: Store, run: Run, outcome: Outcome) -> Outcome:
    """A wait for children that names a key this run never spawned would never end: it
    becomes a failure (``unknown_child``) instead."""
    if not isinstance(outcome, WaitChildren) or outcome.keys is None:
        return outcome
    known = {c.key for c in store.child_runs(run.tenant_id, run.run_id)}
    missing = sorted(set(outcome.keys) - known)
    if not missing:
        return outcome
    return Fail(
        "unknown_child",
        f"wait_for_children names keys {missing} that this run never spawned",
        {"missing": list(missing), "known": sorted(known)},
        outcome.state,
    )


def request_cancel_children(store: Store, clock: Clock, run: Run, reason: str) -> list[str]:
    """Ask every unsettled child of ``run`` to cancel (CANCEL_REQUESTED): a worker then finishes
    each one, compensating its own effects, and passes the cancel on to its own children.
    Returns the run ids asked."""
    asked: list[str] = []
    for child in store.child_runs(run.tenant_id, run.run_id):
        if child.settled or child.status is RunStatus.CANCEL_REQUESTED:
            continue
        for _ in range(10):
            current = store.get_run(run.tenant_id, child.run_id)
            if not transitions.allowed(current.status, RunStatus.CANCEL_REQUESTED):
                break
            try:
                store.set_status(
                    run.tenant_id,
                    child.run_id,
                    expected_status=current.status,
                    expected_version=current.state_version,
                    status=RunStatus.CANCEL_REQUESTED,
                    fence=None,
                    now=clock.now(),
                    data={"reason": reason, "parent_run_id": run.run_id},
                )
                asked.append(child.run_id)
                break
            except (StaleStateError, RunClosedError):
                continue
    return asked
