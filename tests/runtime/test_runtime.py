"""Runtime behaviour on each backend (a real SQLite file, a real PostgreSQL database), advanced
inline with an injected clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest

from perdure import Context, FakeClock, RunStatus, Runtime, Workflow, done, fail, goto, step
from perdure.core.errors import (
    InvalidInputError,
    LeaseLostError,
    RunBusyError,
    StoreError,
    WorkflowNotFoundError,
)
from perdure.core.model import Message
from perdure.core.records import RunError, StepOutcome
from perdure.store.base import Boundary
from tests.backends import overwrite_state_field


@dataclass
class Loop:
    rounds: int = 0
    notes: list[str] = field(default_factory=list)


@step(next=["act"])
def think(ctx: Context, s: Loop):  # type: ignore[no-untyped-def]
    s.rounds += 1
    ctx.add_message("assistant", f"thinking {s.rounds}")
    return goto("act")


@step(next=["think"])
def act(ctx: Context, s: Loop):  # type: ignore[no-untyped-def]
    s.notes.append(f"acted {s.rounds}")
    return goto("think") if s.rounds < 3 else done({"rounds": s.rounds})


agent = Workflow("agent", state=Loop, steps=[think, act])


def test_a_loop_runs_to_the_end_and_keeps_every_boundary(runtime: Runtime) -> None:
    run = runtime.start(agent, {"rounds": 0}, messages=[Message("user", "go")])
    assert runtime.run_until_idle() == 1
    view = runtime.status(run.run_id)
    assert view.run.status is RunStatus.SUCCEEDED
    assert view.run.result == {"rounds": 3}
    assert view.completed_steps == ["think", "act"] * 3
    assert [m.content for m in view.messages] == ["go", "thinking 1", "thinking 2", "thinking 3"]


def test_a_repeated_idempotency_key_returns_the_same_run(runtime: Runtime) -> None:
    a = runtime.start(agent, idempotency_key="order-1")
    b = runtime.start(agent, idempotency_key="order-1")
    assert a.run_id == b.run_id
    assert len(runtime.runs()) == 1


@pytest.mark.parametrize("mode", ["sync", "async", "exit"])
def test_every_durability_mode_reaches_the_same_result(runtime: Runtime, mode: str) -> None:
    run = runtime.start(agent, durability=mode)
    runtime.run_until_idle()
    after = runtime.get(run.run_id)
    assert (after.status, after.result, after.steps_done) == (RunStatus.SUCCEEDED, {"rounds": 3}, 6)
    assert after.release.durability == mode


def test_exit_mode_commits_the_segment_once(runtime: Runtime) -> None:
    run = runtime.start(agent, durability="exit")
    claimed_version = run.state_version + 1
    runtime.run_until_idle()
    assert runtime.get(run.run_id).state_version == claimed_version + 1


def test_an_unknown_durability_mode_is_refused(runtime: Runtime) -> None:
    with pytest.raises(InvalidInputError, match="durability"):
        runtime.start(agent, durability="eventually")


def test_a_step_that_raises_hands_the_run_to_a_person_with_evidence(runtime: Runtime) -> None:
    @step
    def boom(ctx: Context, s: Loop):  # type: ignore[no-untyped-def]
        raise ValueError("bad input")

    run = runtime.start(Workflow("boom", state=Loop, steps=[boom]))
    runtime.run_until_idle()
    after = runtime.get(run.run_id)
    assert after.status is RunStatus.NEEDS_ATTENTION, "never FAILED unless the workflow says so"
    assert after.error is not None
    assert (after.error.reason, after.error.step, after.error.resume_at) == (
        "step_raised",
        "boom",
        "boom",
    )
    assert "ValueError: bad input" in after.error.message
    assert after.error.evidence["error"]["exception"] == "ValueError"
    assert after.error.evidence["attempts"] == 1
    assert after.error.evidence["traceback"]
    assert after.error.suggested_action and "resume" in after.error.suggested_action


def test_a_declared_failure_is_recorded(runtime: Runtime) -> None:
    @step
    def refuse(ctx: Context, s: Loop):  # type: ignore[no-untyped-def]
        return fail("policy_rejected", "over the limit", limit=100)

    run = runtime.start(Workflow("refuse", state=Loop, steps=[refuse]))
    runtime.run_until_idle()
    assert runtime.get(run.run_id).error == RunError(
        "policy_rejected", "over the limit", "refuse", {"limit": 100}
    )


def test_going_to_an_undeclared_step_fails_the_run(runtime: Runtime) -> None:
    @step(next=["b"])
    def a(ctx: Context, s: Loop):  # type: ignore[no-untyped-def]
        return goto("a")

    @step
    def b(ctx: Context, s: Loop):  # type: ignore[no-untyped-def]
        return done()

    run = runtime.start(Workflow("stray", state=Loop, steps=[a, b]))
    runtime.run_until_idle()
    assert runtime.get(run.run_id).error.reason == "undeclared_transition"


def test_cancel_of_an_idle_run_ends_it_cancelled(runtime: Runtime) -> None:
    run = runtime.start(agent)
    assert (
        runtime.cancel(run.run_id, reason="user changed their mind").status is RunStatus.CANCELLED
    )
    assert runtime.run_until_idle() == 0
    transitions = [
        (e.data["from"], e.data["to"])
        for e in runtime.store.events("default", run.run_id)
        if e.type == "status"
    ]
    assert transitions == [("PENDING", "CANCEL_REQUESTED"), ("CANCEL_REQUESTED", "CANCELLED")]


def test_cancel_during_a_step_stops_at_the_boundary(db_url: str, clock: FakeClock) -> None:
    other = Runtime(db_url, clock=clock, owner="canceller")
    seen: list[str] = []

    @step(next=["second"])
    def first(ctx: Context, s: Loop):  # type: ignore[no-untyped-def]
        seen.append("first")
        assert other.cancel(ctx.run_id).status is RunStatus.CANCEL_REQUESTED
        return goto("second")

    @step
    def second(ctx: Context, s: Loop):  # type: ignore[no-untyped-def]
        seen.append("second")
        return done()

    wf = Workflow("cancellable", state=Loop, steps=[first, second])
    with Runtime(db_url, clock=clock, owner="worker") as rt:
        run = rt.start(wf)
        rt.run_until_idle()
        after = rt.get(run.run_id)
    other.close()
    assert seen == ["first"]
    assert after.status is RunStatus.CANCELLED
    assert after.owner is None


def test_cancel_of_a_finished_run_changes_nothing(runtime: Runtime) -> None:
    run = runtime.start(agent)
    runtime.run_until_idle()
    assert runtime.cancel(run.run_id).status is RunStatus.SUCCEEDED


def test_an_unreadable_checkpoint_quarantines_only_that_run(runtime: Runtime, db_url: str) -> None:
    bad = runtime.start(agent)
    good = runtime.start(agent)
    overwrite_state_field(db_url, bad.run_id, "rounds", "{broken")
    assert runtime.run_until_idle() == 2
    quarantined = runtime.get(bad.run_id)
    assert quarantined.status is RunStatus.QUARANTINED
    assert quarantined.error.reason == "decode_error"
    assert quarantined.next_step == "think", "the run keeps its place; nothing restarts"
    assert runtime.get(good.run_id).status is RunStatus.SUCCEEDED


def test_a_run_of_an_unloaded_workflow_is_not_claimed(runtime: Runtime, db_url: str) -> None:
    runtime.start(agent)
    with Runtime(db_url, owner="other") as rt:
        assert rt.run_until_idle() == 0
        with pytest.raises(WorkflowNotFoundError):
            rt.workflow("agent")


def test_resume_of_a_run_leased_by_a_live_owner_is_busy(
    runtime: Runtime, db_url: str, clock: FakeClock
) -> None:
    run = runtime.start(agent)
    assert runtime.store.claim(
        "someone-alive", clock.now().replace(year=2100), clock.now(), ["agent"]
    )
    with pytest.raises(RunBusyError, match="leased by someone-alive"):
        runtime.resume(run.run_id)


def test_a_worker_whose_lease_was_reclaimed_cannot_commit(db_url: str, clock: FakeClock) -> None:
    a = Runtime(db_url, clock=clock, owner="a", workflows=[agent])
    b = Runtime(db_url, clock=clock, owner="b", workflows=[agent])
    run = a.start(agent)
    stale = a.store.claim("a", clock.now(), clock.now(), ["agent"])
    assert stale is not None
    clock.advance(1)
    assert b.run_until_idle() == 1, "the expired lease is reclaimed and the run finished"
    final = b.get(run.run_id)
    now = clock.now()
    late = Boundary(
        "think", StepOutcome.NEXT, "act", RunStatus.RUNNING, now, now, {"rounds": b"99"}
    )
    with pytest.raises(LeaseLostError):
        a.store.commit("default", run.run_id, stale.fence, stale.state_version, [late], now)
    assert b.get(run.run_id) == final
    a.close()
    b.close()


def test_a_database_path_that_cannot_be_created_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot create the folder") as caught:
        Runtime(f"sqlite:///{blocker}/sub/db.sqlite")
    assert "choose a writable location" in caught.value.one_line()


def test_a_heartbeat_renews_the_lease_and_notices_when_it_is_lost(
    db_url: str, clock: FakeClock
) -> None:
    a = Runtime(db_url, clock=clock, owner="a", lease_seconds=30)
    run = a.start(agent)
    claimed = a.store.claim("a", clock.now() + timedelta(seconds=30), clock.now(), ["agent"])
    assert claimed is not None
    lease = a.services.heartbeat.hold("default", run.run_id, claimed.fence)
    clock.advance(25)
    a.services.heartbeat.beat()
    clock.advance(25)
    assert a.store.claim("b", clock.now(), clock.now(), ["agent"]) is None, "renewed: still held"
    clock.advance(31)
    assert a.store.claim("b", clock.now() + timedelta(seconds=30), clock.now(), ["agent"])
    a.services.heartbeat.beat()
    assert lease.lost.is_set()
    assert a.services.heartbeat.held() == []
    a.close()
