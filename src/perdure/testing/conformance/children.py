"""Child runs: a run created naming its parent is listed by key; the transaction that settles
the last awaited child wakes the waiting parent; a parent whose children settled first does
not wait; a commit or a status change both count as settling."""

from __future__ import annotations

from dataclasses import replace

from perdure.core.clock import FakeClock
from perdure.core.model import RunStatus
from perdure.core.records import ChildrenWait, StepOutcome
from perdure.store.base import Boundary, Store
from perdure.testing.conformance.support import LEASE, boundary, claimed, new_run


def spawn(store: Store, clock: FakeClock, parent: str, key: str) -> str:
    child = replace(
        new_run(f"{parent}.{key}", thread=f"{parent}.{key}"), parent_run_id=parent, child_key=key
    )
    store.create_run(child, clock.now())
    return child.run_id


def wait_for(store: Store, clock: FakeClock, keys: tuple[str, ...] | None) -> None:
    run = store.get_run("t1", "p")
    now = clock.now()
    b = Boundary(
        "first",
        StepOutcome.WAIT_CHILDREN,
        "after",
        RunStatus.WAITING_EXTERNAL,
        now,
        now,
        waiting=ChildrenWait("after", keys),
    )
    store.commit("t1", "p", run.fence, run.state_version, [b], now)


def finish(store: Store, clock: FakeClock, run_id: str) -> None:
    run = store.claim("w2", clock.now() + LEASE, clock.now(), ["wf"], tenant_id="t1", run_id=run_id)
    assert run is not None
    done = boundary(clock, next_step=None, status=RunStatus.SUCCEEDED, result={"k": run_id})
    store.commit("t1", run_id, run.fence, run.state_version, [done], clock.now())


def test_the_last_awaited_child_to_settle_wakes_its_parent(store: Store, clock: FakeClock) -> None:
    claimed(store, clock, "p")
    a, b = spawn(store, clock, "p", "a"), spawn(store, clock, "p", "b")
    wait_for(store, clock, None)
    assert store.get_run("t1", "p").status is RunStatus.WAITING_EXTERNAL
    finish(store, clock, a)
    assert store.get_run("t1", "p").status is RunStatus.WAITING_EXTERNAL
    run = store.get_run("t1", b)
    store.set_status(
        "t1",
        b,
        expected_status=run.status,
        expected_version=run.state_version,
        status=RunStatus.CANCEL_REQUESTED,
        fence=None,
        now=clock.now(),
    )
    assert store.get_run("t1", "p").status is RunStatus.WAITING_EXTERNAL, "not settled yet"
    run = store.get_run("t1", b)
    store.set_status(
        "t1",
        b,
        expected_status=run.status,
        expected_version=run.state_version,
        status=RunStatus.CANCELLED,
        fence=None,
        now=clock.now(),
    )
    woken = store.get_run("t1", "p")
    assert (woken.status, woken.next_step, woken.owner) == (RunStatus.RUNNING, "after", None)
    kids = store.child_runs("t1", "p")
    assert [(k.key, k.status) for k in kids] == [
        ("a", RunStatus.SUCCEEDED),
        ("b", RunStatus.CANCELLED),
    ]
    assert kids[0].result == {"k": a}


def test_a_parent_whose_awaited_children_settled_first_does_not_wait(
    store: Store, clock: FakeClock
) -> None:
    claimed(store, clock, "p")
    a = spawn(store, clock, "p", "a")
    spawn(store, clock, "p", "b")  # not awaited
    finish(store, clock, a)
    wait_for(store, clock, ("a",))
    after = store.get_run("t1", "p")
    assert (after.status, after.next_step) == (RunStatus.RUNNING, "after")
    assert store.child_runs("t1", "other") == []
