"""Store behaviours beyond runs and leases: the effect ledger, approvals, the signal inbox,
person-led resumes, remembered requests, upgrades and rollback re-queues."""

from __future__ import annotations

import pytest

from perdure import FakeClock
from perdure.core.effects import EffectStatus, NewEffect
from perdure.core.errors import (
    ApprovalStateError,
    EffectStateError,
    LeaseLostError,
    RunClosedError,
)
from perdure.core.model import Message, RunStatus
from perdure.core.records import ApprovalRequest, ApprovalWait, SignalWait, StepOutcome
from perdure.store.base import Boundary, Store
from tests.conformance.conftest import LEASE, new_run

E = EffectStatus


def claimed(store: Store, clock: FakeClock, run_id: str = "r1", owner: str = "w1"):  # type: ignore[no-untyped-def]
    store.create_run(new_run(run_id), clock.now())
    run = store.claim(
        owner, clock.now() + LEASE, clock.now(), ["wf"], tenant_id="t1", run_id=run_id
    )
    assert run is not None
    return run


def intent(key: str = "t1/wf/r1/1.first/pay") -> NewEffect:
    return NewEffect(key, "first", 1, "pay", "payments", "charge", "h1", {"amount": 5}, "undo")


def test_an_effect_intent_is_recorded_once_and_fenced(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    first = store.plan_effect("t1", "r1", run.fence, intent(), clock.now())
    again = store.plan_effect("t1", "r1", run.fence, intent(), clock.now())
    assert first == again and first.status is E.PLANNED and first.attempts == 0
    moved = store.update_effect(
        "t1",
        first.key,
        expected_status=E.PLANNED,
        status=E.EXECUTING,
        fence=run.fence,
        now=clock.now(),
        attempts_delta=1,
    )
    assert (moved.status, moved.attempts) == (E.EXECUTING, 1)
    with pytest.raises(EffectStateError):
        store.update_effect(
            "t1",
            first.key,
            expected_status=E.PLANNED,
            status=E.EXECUTING,
            fence=run.fence,
            now=clock.now(),
        )
    clock.advance(31)
    store.claim("w2", clock.now() + LEASE, clock.now(), ["wf"])
    with pytest.raises(LeaseLostError):
        store.update_effect(
            "t1",
            first.key,
            expected_status=E.EXECUTING,
            status=E.CONFIRMED,
            fence=run.fence,
            now=clock.now(),
            result={"ok": 1},
        )
    done = store.update_effect(
        "t1",
        first.key,
        expected_status=E.EXECUTING,
        status=E.CONFIRMED,
        fence=None,
        now=clock.now(),
        result={"ok": 1},
        receipt="rc-1",
    )
    assert (done.result, done.receipt) == ({"ok": 1}, "rc-1")
    assert [e.key for e in store.list_effects("t1", statuses=[E.CONFIRMED])] == [first.key]
    assert store.get_effect("t2", first.key) is None


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


def test_an_upgrade_rewrites_state_and_versions(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    up = store.upgrade_run(
        "t1",
        "r1",
        fence=run.fence,
        expected_version=run.state_version,
        fields={"m": b"1"},
        drop=["n"],
        next_step="renamed",
        workflow_version=2,
        state_schema=3,
        now=clock.now(),
        data={},
    )
    assert (up.next_step, up.workflow_version, up.state_schema) == ("renamed", 2, 3)
    assert store.load_state("t1", "r1") == {"m": b"1"}
    assert up.release.state_schema == 1, "the manifest keeps what the run started under"


def test_runs_too_new_are_requeued_by_code_that_reads_them(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    store.set_status(
        "t1",
        "r1",
        expected_status=RunStatus.RUNNING,
        expected_version=run.state_version,
        status=RunStatus.QUARANTINED,
        fence=run.fence,
        now=clock.now(),
        data={"reason": "schema_too_new"},
    )
    assert store.requeue_too_new("wf", workflow_version=0, state_schema=9, now=clock.now()) == []
    assert store.requeue_too_new("wf", workflow_version=1, state_schema=1, now=clock.now()) == [
        ("t1", "r1")
    ]
    assert store.get_run("t1", "r1").status is RunStatus.RUNNING
    assert [r.run_id for r in store.scan_runs([RunStatus.RUNNING])] == ["r1"]


def test_a_runs_messages_can_be_deleted(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    now = clock.now()
    b = Boundary(
        "first",
        "next",
        "second",
        RunStatus.RUNNING,
        now,
        now,
        messages=(Message("assistant", "hi"),),
    )
    store.commit("t1", "r1", run.fence, run.state_version, [b], now)
    assert store.delete_run_messages("t1", "r1") == 1
    assert store.messages("t1", "th1") == []
