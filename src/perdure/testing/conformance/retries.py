"""Durable retry waits: a deferred run sleeps until its wake time."""

from __future__ import annotations

import pytest

from perdure.core.clock import FakeClock
from perdure.core.errors import (
    LeaseLostError,
)
from perdure.core.model import RunStatus
from perdure.core.records import StepOutcome
from perdure.store.base import Boundary, Store
from perdure.testing.conformance.support import LEASE, claimed


def test_a_deferred_run_sleeps_until_wake_at(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    wake = clock.now() + LEASE
    slept = store.defer(
        "t1",
        "r1",
        fence=run.fence,
        expected_version=run.state_version,
        wake_at=wake,
        step_attempts=1,
        now=clock.now(),
        data={"kind": "rate_limited"},
    )
    assert (slept.wake_at, slept.step_attempts, slept.retry_since) == (wake, 1, clock.now())
    assert (slept.owner, slept.lease_until) == (None, None), "a sleeping run holds no lease"
    assert slept.state_version == run.state_version + 1
    event = store.events("t1", "r1")[-1]
    assert (event.type, event.step, event.data["attempts"]) == ("retry_scheduled", "first", 1)
    clock.advance(29)
    assert store.claim("w2", clock.now() + LEASE, clock.now(), ["wf"]) is None
    clock.advance(1)
    woken = store.claim("w2", clock.now() + LEASE, clock.now(), ["wf"])
    assert woken is not None and woken.wake_at is None and woken.step_attempts == 1
    now = clock.now()
    b = Boundary("first", StepOutcome.NEXT, "second", RunStatus.RUNNING, now, now)
    store.commit("t1", "r1", woken.fence, woken.state_version, [b], now)
    after = store.get_run("t1", "r1")
    assert (after.step_attempts, after.retry_since) == (0, None), "a boundary clears the count"


def test_a_stale_worker_cannot_defer(store: Store, clock: FakeClock) -> None:
    old = claimed(store, clock)
    clock.advance(31)
    assert store.claim("w2", clock.now() + LEASE, clock.now(), ["wf"]) is not None
    with pytest.raises(LeaseLostError):
        store.defer(
            "t1",
            "r1",
            fence=old.fence,
            expected_version=old.state_version,
            wake_at=clock.now(),
            step_attempts=1,
            now=clock.now(),
        )


def test_a_status_change_ends_a_retry_wait(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    slept = store.defer(
        "t1",
        "r1",
        fence=run.fence,
        expected_version=run.state_version,
        wake_at=clock.now() + LEASE,
        step_attempts=1,
        now=clock.now(),
    )
    cancelling = store.set_status(
        "t1",
        "r1",
        expected_status=RunStatus.RUNNING,
        expected_version=slept.state_version,
        status=RunStatus.CANCEL_REQUESTED,
        fence=None,
        now=clock.now(),
    )
    assert cancelling.wake_at is None
    assert store.claim("w2", clock.now() + LEASE, clock.now(), ["wf"]) is not None
