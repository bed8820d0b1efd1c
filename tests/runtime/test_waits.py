"""Waiting runs hold nothing and resume exactly where they waited: approvals, signals, timers,
budgets, cancellation and a person taking over. Real SQLite files; "restarts" are new Runtime
objects on the same file (nothing carried in memory); time moves only by the fake clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from perdure import Context, FakeClock, RunStatus, Runtime, Workflow, done, fail, goto, step
from perdure.core.budget import Budget
from perdure.core.errors import (
    ApprovalStateError,
    InvalidInputError,
    NotAuthorizedError,
    RunClosedError,
    RunNotFoundError,
)
from perdure.core.model import Principal
from perdure.core.workflow import sleep, wait_for_approval, wait_for_signal

MANAGER = Principal("default", "maria", frozenset({"refund_manager"}))
CLERK = Principal("default", "carl", frozenset({"support"}))
OTHER_TENANT = Principal("acme", "mallory", frozenset({"refund_manager"}))


@dataclass
class Case:
    amount: int = 120
    log: list[str] = field(default_factory=list)


@step(next=["refund", "decline"])
def review(ctx: Context, s: Case):  # type: ignore[no-untyped-def]
    s.log.append("review")
    return wait_for_approval(
        "refund_manager",
        {"case": 8472, "amount": s.amount},
        on_approve="refund",
        on_reject="decline",
    )


@step
def refund(ctx: Context, s: Case):  # type: ignore[no-untyped-def]
    approval = ctx.approval
    assert approval is not None
    return done({"refunded": s.amount, "by": approval.decided_by, "comment": approval.comment})


@step
def decline(ctx: Context, s: Case):  # type: ignore[no-untyped-def]
    return done({"declined_by": ctx.approval.decided_by if ctx.approval else None})


approval_flow = Workflow("approval", state=Case, steps=[review, refund, decline])


def fresh(db_url: str, clock: FakeClock, *workflows: Workflow[Any]) -> Runtime:
    return Runtime(db_url, clock=clock, owner="w", workflows=workflows or [approval_flow])


def test_an_approval_three_days_later_across_restarts_continues_where_it_waited(
    db_url: str, clock: FakeClock
) -> None:
    with fresh(db_url, clock) as first:
        run = first.start(approval_flow)
        first.run_until_idle()
        waiting = first.get(run.run_id)
    assert (waiting.status, waiting.owner, waiting.next_step) == (
        RunStatus.WAITING_APPROVAL,
        None,
        None,
    )
    clock.advance(24 * 3600)
    with fresh(db_url, clock) as second:
        assert second.run_until_idle() == 0, "a waiting run is not claimable"
        (pending,) = second.approvals()
        assert pending.request == {"case": 8472, "amount": 120}
        assert pending.role == "refund_manager"
    clock.advance(2 * 24 * 3600)
    with fresh(db_url, clock) as third:
        decided = third.approve(run.run_id, MANAGER, comment="policy 4.2 applies")
        assert decided.approved
        assert third.run_until_idle() == 1
        final = third.status(run.run_id)
    assert final.run.status is RunStatus.SUCCEEDED
    assert final.run.result == {"refunded": 120, "by": "maria", "comment": "policy 4.2 applies"}
    assert final.completed_steps == ["review", "refund"], "review ran once"


def test_a_rejection_goes_to_the_reject_step(runtime: Runtime) -> None:
    run = runtime.start(approval_flow)
    runtime.run_until_idle()
    runtime.reject(run.run_id, MANAGER, comment="not eligible")
    runtime.run_until_idle()
    assert runtime.get(run.run_id).result == {"declined_by": "maria"}


def test_the_wrong_role_and_another_tenant_are_refused(runtime: Runtime) -> None:
    run = runtime.start(approval_flow)
    runtime.run_until_idle()
    with pytest.raises(NotAuthorizedError, match="refund_manager"):
        runtime.approve(run.run_id, CLERK)
    with pytest.raises(RunNotFoundError):
        runtime.approve(run.run_id, OTHER_TENANT)
    assert runtime.get(run.run_id).status is RunStatus.WAITING_APPROVAL
    assert runtime.approvals(tenant="acme") == []


def test_a_repeated_decision_request_returns_the_first_result(runtime: Runtime) -> None:
    run = runtime.start(approval_flow)
    runtime.run_until_idle()
    first = runtime.approve(run.run_id, MANAGER, request_id="req-1")
    again = runtime.approve(run.run_id, MANAGER, request_id="req-1")
    assert again == first
    with pytest.raises(ApprovalStateError):
        runtime.reject(run.run_id, MANAGER, request_id="req-2")


def test_a_late_decision_on_a_finished_run_is_recorded_and_ignored(runtime: Runtime) -> None:
    run = runtime.start(approval_flow)
    runtime.run_until_idle()
    runtime.cancel(run.run_id)
    with pytest.raises(RunClosedError, match="recorded and ignored"):
        runtime.approve(run.run_id, MANAGER)
    assert runtime.get(run.run_id).status is RunStatus.CANCELLED
    assert "late_approval" in [e.type for e in runtime.store.events("default", run.run_id)]


@dataclass
class Order:
    paid: Any = None
    log: list[str] = field(default_factory=list)


@step(next=["ship", "give_up"])
def await_payment(ctx: Context, s: Order):  # type: ignore[no-untyped-def]
    s.log.append("await")
    return wait_for_signal("paid", next="ship", timeout=3600, on_timeout="give_up")


@step
def ship(ctx: Context, s: Order):  # type: ignore[no-untyped-def]
    return done({"shipped": ctx.signal("paid")})


@step
def give_up(ctx: Context, s: Order):  # type: ignore[no-untyped-def]
    return fail("payment_timeout", "no payment within an hour")


signal_flow = Workflow("order", state=Order, steps=[await_payment, ship, give_up])


def test_a_signal_wakes_a_waiting_run(runtime: Runtime) -> None:
    run = runtime.start(signal_flow)
    runtime.run_until_idle()
    assert runtime.get(run.run_id).status is RunStatus.WAITING_EXTERNAL
    _, what = runtime.signal(run.run_id, "paid", {"amount": 30}, signal_id="psp-1")
    assert what == "woke"
    runtime.run_until_idle()
    assert runtime.get(run.run_id).result == {"shipped": {"amount": 30}}


def test_a_signal_sent_before_the_wait_is_kept_in_the_inbox(runtime: Runtime) -> None:
    run = runtime.start(signal_flow)
    _, what = runtime.signal(run.run_id, "paid", {"amount": 5}, signal_id="early")
    assert what == "queued"
    runtime.run_until_idle()
    final = runtime.status(run.run_id)
    assert final.run.result == {"shipped": {"amount": 5}}
    assert final.completed_steps == ["await_payment", "ship"], "it never had to wait"


def test_a_duplicate_signal_is_ignored(runtime: Runtime) -> None:
    run = runtime.start(signal_flow)
    runtime.run_until_idle()
    runtime.signal(run.run_id, "paid", {"amount": 1}, signal_id="dup")
    _, what = runtime.signal(run.run_id, "paid", {"amount": 999}, signal_id="dup")
    assert what == "duplicate"
    assert [s.payload for s in runtime.store.signals("default", run.run_id)] == [{"amount": 1}]


def test_a_signal_wait_times_out_after_restarts(db_url: str, clock: FakeClock) -> None:
    with fresh(db_url, clock, signal_flow) as rt:
        run = rt.start(signal_flow)
        rt.run_until_idle()
    clock.advance(3599)
    with fresh(db_url, clock, signal_flow) as rt:
        assert rt.run_until_idle() == 0
    clock.advance(2)
    with fresh(db_url, clock, signal_flow) as rt:
        assert rt.run_until_idle() == 1
        final = rt.status(run.run_id)
    assert final.run.status is RunStatus.FAILED
    assert final.run.error.reason == "payment_timeout"
    assert final.completed_steps == ["await_payment", "give_up"]


def test_a_late_signal_to_a_finished_run_is_recorded_and_ignored(runtime: Runtime) -> None:
    run = runtime.start(signal_flow)
    runtime.cancel(run.run_id)
    with pytest.raises(RunClosedError):
        runtime.signal(run.run_id, "paid", {})
    assert "late_signal" in [e.type for e in runtime.store.events("default", run.run_id)]


@step(next=["wake"])
def nap(ctx: Context, s: Order):  # type: ignore[no-untyped-def]
    return sleep(3600, next="wake", now=ctx.now())


@step
def wake(ctx: Context, s: Order):  # type: ignore[no-untyped-def]
    return done(ctx.now().isoformat())


timer_flow = Workflow("timer", state=Order, steps=[nap, wake])


def test_a_timer_fires_after_restarts_at_the_right_time(db_url: str, clock: FakeClock) -> None:
    with fresh(db_url, clock, timer_flow) as rt:
        run = rt.start(timer_flow)
        rt.run_until_idle()
        assert rt.get(run.run_id).status is RunStatus.WAITING_EXTERNAL
    clock.advance(3599)
    with fresh(db_url, clock, timer_flow) as rt:
        assert rt.run_until_idle() == 0, "one second early"
    clock.advance(1)
    with fresh(db_url, clock, timer_flow) as rt:
        assert rt.run_until_idle() == 1
        assert rt.get(run.run_id).status is RunStatus.SUCCEEDED


def test_cancel_during_a_wait_ends_the_run(runtime: Runtime) -> None:
    run = runtime.start(timer_flow)
    runtime.run_until_idle()
    assert runtime.cancel(run.run_id).status is RunStatus.CANCELLED
    assert runtime.run_until_idle() == 0


def test_a_long_step_sees_the_cancel_at_a_safe_point(db_url: str, clock: FakeClock) -> None:
    other = Runtime(db_url, clock=clock, owner="canceller")
    reached: list[int] = []

    @step
    def crunch(ctx: Context, s: Order):  # type: ignore[no-untyped-def]
        for chunk in range(100):
            ctx.check_cancelled()
            reached.append(chunk)
            if chunk == 2:
                assert not ctx.cancel_requested
                other.cancel(ctx.run_id)
                assert ctx.cancel_requested
        return done()

    wf = Workflow("crunch", state=Order, steps=[crunch], delete_messages_on_cancel=True)
    with fresh(db_url, clock, wf) as rt:
        run = rt.start(wf)
        rt.run_until_idle()
        final = rt.get(run.run_id)
    other.close()
    assert reached == [0, 1, 2]
    assert final.status is RunStatus.CANCELLED


@step(next=["think"])
def think(ctx: Context, s: Case):  # type: ignore[no-untyped-def]
    ctx.charge(cost=0.25, tokens=1000)
    return goto("think")


def test_a_step_budget_stops_the_run_for_a_person_who_can_raise_it(runtime: Runtime) -> None:
    wf = Workflow("loop", state=Case, steps=[think], budget=Budget(steps=3, max_repeats=None))
    run = runtime.start(wf)
    runtime.run_until_idle()
    paused = runtime.get(run.run_id)
    assert paused.status is RunStatus.NEEDS_ATTENTION
    assert paused.error.reason == "budget_exhausted"
    assert paused.error.evidence["limit"] == "steps"
    assert paused.steps_done == 3
    runtime.resume(run.run_id, add_budget=Budget(steps=2), by="ops")
    again = runtime.get(run.run_id)
    assert (again.status, again.steps_done) == (RunStatus.NEEDS_ATTENTION, 5)


def test_a_cost_budget_fails_the_run_by_policy(runtime: Runtime) -> None:
    budget = Budget(cost=1.0, on_exhausted="fail", max_repeats=None)
    run = runtime.start(Workflow("spender", state=Case, steps=[think]), budget=budget)
    runtime.run_until_idle()
    failed = runtime.get(run.run_id)
    assert (failed.status, failed.error.reason) == (RunStatus.FAILED, "budget_exhausted")
    assert failed.budget.used.to_json() == {"steps": 4, "cost": 1.0, "tokens": 4000}


def test_the_no_progress_guard_stops_a_run_that_repeats_itself(runtime: Runtime) -> None:
    run = runtime.start(Workflow("stuck", state=Case, steps=[think], budget=Budget(max_repeats=4)))
    runtime.run_until_idle()
    stuck = runtime.get(run.run_id)
    assert (stuck.status, stuck.error.reason) == (RunStatus.NEEDS_ATTENTION, "no_progress")
    assert stuck.steps_done == 4


@dataclass
class Draft:
    amount: int = 0
    approved_by: str | None = None


@step(next=["send"])
def prepare(ctx: Context, s: Draft):  # type: ignore[no-untyped-def]
    if s.amount > 100:
        return fail("too_large", "needs a person")
    return goto("send")


@step
def send(ctx: Context, s: Draft):  # type: ignore[no-untyped-def]
    return done({"sent": s.amount})


def test_a_person_resumes_at_a_step_with_patched_state_never_from_the_start(
    runtime: Runtime, db_url: str
) -> None:
    from perdure.core.signals import Escalate

    @step(next=["send"])
    def check(ctx: Context, s: Draft):  # type: ignore[no-untyped-def]
        if s.amount > 100 and not s.approved_by:
            raise Escalate("needs_attention", "over_limit", {"amount": s.amount})
        return goto("send")

    wf = Workflow("takeover", state=Draft, steps=[check, send])
    run = runtime.start(wf, {"amount": 500})
    runtime.run_until_idle()
    paused = runtime.get(run.run_id)
    assert paused.status is RunStatus.NEEDS_ATTENTION
    assert paused.error.resume_at == "check"
    with pytest.raises(InvalidInputError, match="does not fit"):
        runtime.resume(run.run_id, patch={"amount": "lots"})
    with pytest.raises(InvalidInputError, match="not declared"):
        runtime.resume(run.run_id, at="nowhere")
    runtime.resume(
        run.run_id,
        patch={"amount": 90, "approved_by": "ops"},
        by="ops-anna",
        request_id="takeover-1",
    )
    final = runtime.status(run.run_id)
    assert final.run.result == {"sent": 90}
    resumed = [e for e in final.events if e.type == "resumed"]
    assert resumed[0].data["by"] == "ops-anna"
    assert resumed[0].data["patched"] == ["amount", "approved_by"]
    assert final.completed_steps == ["check", "send"], "nothing before the checkpoint re-ran"


def test_takeover_options_are_refused_for_a_run_that_does_not_need_a_person(
    runtime: Runtime,
) -> None:
    run = runtime.start(Workflow("plain", state=Draft, steps=[prepare, send]))
    with pytest.raises(InvalidInputError, match="need a person"):
        runtime.resume(run.run_id, at="send")


def test_a_run_pays_nothing_for_budgets_it_does_not_have(runtime: Runtime) -> None:
    run = runtime.start(Workflow("nobudget", state=Draft, steps=[prepare, send]))
    runtime.run_until_idle()
    assert runtime.get(run.run_id).budget is None
