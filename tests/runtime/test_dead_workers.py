"""A worker on another host that missed its beats is shown dead and its runs are taken over
before their leases run out; a worker that was only paused is stopped by the fence."""

from __future__ import annotations

from perdure import Context, FakeClock, RunStatus, Runtime, Workflow, done, goto, step
from perdure.core.model import WorkerState
from perdure.runtime.execution.services import StopReason

OTHER = "another-host:4242"


@step(next=["two"])
def one(ctx: Context, s: dict) -> object:  # type: ignore[type-arg]
    return goto("two")


@step
def two(ctx: Context, s: dict) -> object:  # type: ignore[type-arg]
    return done({"by": ctx.fence})


flow = Workflow("handoff", state=dict, steps=[one, two])


def test_a_worker_that_missed_its_beats_is_dead_and_its_runs_are_taken_over(
    db_url: str, clock: FakeClock
) -> None:
    with (
        Runtime(db_url, clock=clock, workflows=[flow], owner=OTHER) as other,
        Runtime(db_url, clock=clock, workflows=[flow], owner="this-host:1") as here,
    ):
        run_id = other.start(flow, {}).run_id
        held = other.claim_next()
        assert held is not None and held.owner == OTHER
        other.store.worker_beat(
            OTHER,
            host="another-host",
            pid=4242,
            concurrency=1,
            runs_held=1,
            now=clock.now(),
            beat_seconds=10.0,
        )

        clock.advance(20)  # two beats missed: not yet dead, the lease (30 s) still holds
        assert [w.state for w in here.activity.workers()] == [WorkerState.LIVE]
        assert here.run_until_idle() == 0

        clock.advance(6)  # 26 s > 2.5 beats of 10 s, still inside the 30 s lease
        assert [w.state for w in here.activity.workers()] == [WorkerState.DEAD]
        assert here.run_until_idle() == 1
        run = here.get(run_id)
        assert run.status is RunStatus.SUCCEEDED and run.result == {"by": held.fence + 1}

        # the "dead" worker was only paused: whatever it does now is refused by the fence
        assert other.advance_claimed(held).reason is StopReason.LOST
        assert here.get(run_id).result == {"by": held.fence + 1}
