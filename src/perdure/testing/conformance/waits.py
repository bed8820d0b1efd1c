"""Waits and people: approvals, the signal inbox, person-led resumes, remembered requests."""

from __future__ import annotations

import pytest

from perdure.core.clock import FakeClock
from perdure.core.errors import (
    ApprovalStateError,
    RunClosedError,
)
from perdure.core.model import RunStatus
from perdure.core.records import ApprovalRequest, ApprovalWait, SignalWait, StepOutcome
from perdure.store.base import Boundary, Store
from perdure.testing.conformance.support import claimed


def test_a_wait_for_approval_is_decided_once(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    now = clock.now()
    wait = ApprovalWait("mgr", "yes", "no")
    b = Boundary(
        "first",
        StepOutcome.WAIT_APPROVAL,
        None,
        RunStatus.WAITING_APPROVAL,
        now,
        now,
        waiting=wait,
        approval=ApprovalRequest(wait, {"amount": 5}),
    )
    store.commit("t1", "r1", run.fence, run.state_version, [b], now)
    (pending,) = store.approvals("t1", pending=True)
    assert pending.request == {"amount": 5} and store.get_run("t1", "r1").owner is None
    decided, first = store.decide_approval(
        "t1",
        pending.id,
        approve=True,
        by="m",
        role="mgr",
        comment="ok",
        request_id="q1",
        now=clock.now(),
    )
    again, second = store.decide_approval(
        "t1",
        pending.id,
        approve=False,
        by="m",
        role="mgr",
        comment=None,
        request_id="q1",
        now=clock.now(),
    )
    assert (first, second) == (True, False) and again == decided
    after = store.get_run("t1", "r1")
    assert (after.status, after.next_step) == (RunStatus.RUNNING, "yes")
    with pytest.raises(ApprovalStateError):
        store.decide_approval(
            "t1",
            pending.id,
            approve=False,
            by="x",
            role="mgr",
            comment=None,
            request_id="q2",
            now=clock.now(),
        )


def test_the_signal_inbox_keeps_early_signals_and_ignores_duplicates(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    _, what = store.deliver_signal(
        "t1", "r1", signal_id="s1", name="go", payload={"a": 1}, now=clock.now()
    )
    assert what == "queued"
    _, what = store.deliver_signal(
        "t1", "r1", signal_id="s1", name="go", payload={"a": 2}, now=clock.now()
    )
    assert what == "duplicate"
    now = clock.now()
    waiting = SignalWait("go", "after")
    b = Boundary(
        "first",
        StepOutcome.WAIT_SIGNAL,
        "after",
        RunStatus.WAITING_EXTERNAL,
        now,
        now,
        waiting=waiting,
    )
    store.commit("t1", "r1", run.fence, run.state_version, [b], now)
    after = store.get_run("t1", "r1")
    assert (after.status, after.next_step, after.owner) == (RunStatus.RUNNING, "after", None)
    (signal,) = store.signals("t1", "r1")
    assert signal.payload == {"a": 1} and signal.consumed_at is not None


def test_a_signal_to_a_finished_run_is_recorded_and_refused(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    now = clock.now()
    store.commit(
        "t1",
        "r1",
        run.fence,
        run.state_version,
        [Boundary("first", StepOutcome.DONE, None, RunStatus.SUCCEEDED, now, now)],
        now,
    )
    with pytest.raises(RunClosedError):
        store.deliver_signal("t1", "r1", signal_id="late", name="go", payload=None, now=now)
    assert store.events("t1", "r1")[-1].type == "late_signal"


def test_a_person_reopens_a_run_with_patched_state(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    paused = store.set_status(
        "t1",
        "r1",
        expected_status=RunStatus.RUNNING,
        expected_version=run.state_version,
        status=RunStatus.NEEDS_ATTENTION,
        fence=run.fence,
        now=clock.now(),
        data={"reason": "x"},
    )
    assert paused.owner is None
    reopened = store.reopen(
        "t1",
        "r1",
        expected_status=RunStatus.NEEDS_ATTENTION,
        expected_version=paused.state_version,
        next_step="second",
        state={"n": b"7"},
        budget=None,
        now=clock.now(),
        data={"by": "ops"},
    )
    assert (reopened.status, reopened.next_step) == (RunStatus.RUNNING, "second")
    assert store.load_state("t1", "r1") == {"n": b"7"}


def test_requests_are_remembered_once(store: Store, clock: FakeClock) -> None:
    assert store.recall_request("t1", "q") is None
    store.remember_request("t1", "q", "cancel", {"ok": 1}, clock.now())
    store.remember_request("t1", "q", "cancel", {"ok": 2}, clock.now())
    assert store.recall_request("t1", "q") == ("cancel", {"ok": 1})
    assert store.recall_request("t2", "q") is None
