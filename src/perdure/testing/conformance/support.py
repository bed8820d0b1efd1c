"""What the conformance modules share: a run to create, a claim, a boundary, a run a person
reopened. Every helper takes the store under test and the test's clock."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from perdure.core.clock import FakeClock
from perdure.core.model import Durability, Release, Run, RunStatus
from perdure.core.records import StepOutcome
from perdure.store.base import Boundary, NewRun, Store

LEASE = timedelta(seconds=30)
"""The lease every helper claims with."""


def new_run(
    run_id: str,
    *,
    tenant: str = "t1",
    thread: str = "th1",
    key: str | None = None,
    workflow: str = "wf",
) -> NewRun:
    return NewRun(
        run_id=run_id,
        tenant_id=tenant,
        thread_id=thread,
        workflow=workflow,
        start_step="first",
        release=Release(1, 1, Durability.SYNC, code="abc"),
        state={"n": b"0"},
        idempotency_key=key,
    )


def claimed(store: Store, clock: FakeClock, run_id: str = "r1", owner: str = "w1") -> Run:
    """A new run of tenant t1, claimed by ``owner``."""
    store.create_run(new_run(run_id), clock.now())
    run = store.claim(
        owner, clock.now() + LEASE, clock.now(), ["wf"], tenant_id="t1", run_id=run_id
    )
    assert run is not None
    return run


def claim(store: Store, clock: FakeClock, owner: str = "w1", **kw: Any) -> Run | None:
    """Claim for ``owner`` (workflow ``wf``, a 30-second lease); ``kw`` as :meth:`Store.claim`."""
    return store.claim(owner, clock.now() + LEASE, clock.now(), ["wf"], **kw)


def boundary(
    clock: FakeClock,
    step: str = "first",
    next_step: str | None = "second",
    status: RunStatus = RunStatus.RUNNING,
    **kw: object,
) -> Boundary:
    """A boundary committed now: ``next`` while RUNNING, else ``done``; ``kw`` as Boundary."""
    now = clock.now()
    outcome = StepOutcome.NEXT if status is RunStatus.RUNNING else StepOutcome.DONE
    return Boundary(step, outcome, next_step, status, now, now, **kw)  # type: ignore[arg-type]


def patched_by_a_person(store: Store, clock: FakeClock, state: dict[str, bytes]) -> Run:
    """Run r1 of t1 (RUNNING, held) handed to a person (NEEDS_ATTENTION), who continues it at
    ``second`` with ``state`` patched in; returns the run reopened."""
    current = store.get_run("t1", "r1")
    store.set_status(
        "t1",
        "r1",
        expected_status=RunStatus.RUNNING,
        expected_version=current.state_version,
        status=RunStatus.NEEDS_ATTENTION,
        fence=current.fence,
        now=clock.now(),
    )
    stopped = store.get_run("t1", "r1")
    return store.reopen(
        "t1",
        "r1",
        expected_status=RunStatus.NEEDS_ATTENTION,
        expected_version=stopped.state_version,
        next_step="second",
        state=state,
        budget=None,
        now=clock.now(),
        data=None,
    )


def needs(store: Store, *wings: str) -> None:
    """Skip the calling test on a store that lacks one of ``wings`` (a backend may ship the
    kernel alone, or the kernel and some wings)."""
    missing = [w for w in wings if getattr(store, w, None) is None]
    if missing:
        pytest.skip(f"the store has no {', '.join(missing)} wing")
