"""The effect ledger: intents, guarded moves, a person's resolution, listings."""

from __future__ import annotations

from datetime import timedelta

import pytest

from perdure.core.clock import FakeClock
from perdure.core.effects import EffectMove, EffectPlan, EffectRecord, EffectStatus, NewEffect
from perdure.core.errors import (
    EffectNotFoundError,
    EffectStateError,
    LeaseLostError,
    RunClosedError,
)
from perdure.core.model import Run, RunStatus
from perdure.core.records import EventType, StepOutcome
from perdure.store.base import Boundary, Store
from perdure.testing.conformance.support import LEASE, claim, claimed, new_run

E = EffectStatus


def intent(name: str = "charge", request: object = None) -> NewEffect:
    return NewEffect(
        key=f"t1/wf/r1/1.first/{name}",
        step="first",
        step_seq=1,
        name=name,
        target="payments",
        operation="charge",
        request_hash="h-" + name,
        request=request if request is not None else {"amount": 10, "currency": "EUR"},
    )


def compensated_intent(key: str = "t1/wf/r1/1.first/pay") -> NewEffect:
    return NewEffect(key, "first", 1, "pay", "payments", "charge", "h1", {"amount": 5}, "undo")


def test_an_effect_intent_is_recorded_once_and_fenced(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    first = store.plan_effect("t1", "r1", run.fence, compensated_intent(), clock.now())
    again = store.plan_effect("t1", "r1", run.fence, compensated_intent(), clock.now())
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


def test_planning_an_effect_is_idempotent_on_its_key(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    first = store.plan_effect("t1", "r1", run.fence, intent(), clock.now())
    again = store.plan_effect("t1", "r1", run.fence, intent(), clock.now())
    assert first == again
    assert (first.status, first.attempts, first.request) == (
        E.PLANNED,
        0,
        {"amount": 10, "currency": "EUR"},
    )
    assert [e.type for e in store.events("t1", "r1")].count(EventType.EFFECT) == 1
    assert store.get_effect("t1", first.key) == first
    assert store.get_effect("t2", first.key) is None, "another tenant sees nothing"


def test_a_stale_fence_cannot_plan_or_move_an_effect(store: Store, clock: FakeClock) -> None:
    old = claimed(store, clock)
    planned = store.plan_effect("t1", "r1", old.fence, intent(), clock.now())
    clock.advance(31)
    new = store.claim("w2", clock.now() + LEASE, clock.now(), ["wf"])
    assert new is not None
    with pytest.raises(LeaseLostError):
        store.plan_effect("t1", "r1", old.fence, intent("other"), clock.now())
    assert store.get_effect("t1", intent("other").key) is None
    with pytest.raises(LeaseLostError):
        store.update_effect(
            "t1",
            planned.key,
            expected_status=E.PLANNED,
            status=E.EXECUTING,
            fence=old.fence,
            now=clock.now(),
        )
    assert store.get_effect("t1", planned.key) == planned


def test_a_stale_fence_is_refused_an_intent_the_new_owner_recorded(
    store: Store, clock: FakeClock
) -> None:
    """The intent of a worker that lost its run is refused even when its key is recorded
    already (by the worker that took the run over): answering with that record would let the
    stale worker make the call on an intent that is not its own."""
    old = claimed(store, clock)
    clock.advance(31)
    new = store.claim("w2", clock.now() + LEASE, clock.now(), ["wf"])
    assert new is not None and new.fence == old.fence + 1
    fresh = store.plan_effects([EffectPlan("t1", "r1", new.fence, intent(), True)], clock.now())
    assert isinstance(fresh[0], EffectRecord) and fresh[0].status is E.EXECUTING
    with pytest.raises(LeaseLostError):
        store.plan_effect("t1", "r1", old.fence, intent(), clock.now())
    for executing in (False, True):
        alone = store.plan_effects(
            [EffectPlan("t1", "r1", old.fence, intent(), executing)], clock.now()
        )
        assert isinstance(alone[0], LeaseLostError), alone
    store.create_run(new_run("r2", thread="r2"), clock.now())
    other = claim(store, clock, tenant_id="t1", run_id="r2")
    assert other is not None
    grouped = store.plan_effects(
        [
            EffectPlan("t1", "r1", old.fence, intent(), True),
            EffectPlan("t1", "r2", other.fence, run_intent("r2")),
        ],
        clock.now(),
    )
    assert isinstance(grouped[0], LeaseLostError) and isinstance(grouped[1], EffectRecord)
    assert store.get_effect("t1", intent().key) == fresh[0], "the new owner's record is as it was"


def test_an_intent_recorded_before_its_run_finished_is_refused_after(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    store.plan_effect("t1", "r1", run.fence, intent(), clock.now())
    now = clock.now()
    end = Boundary("first", StepOutcome.DONE, None, RunStatus.SUCCEEDED, now, now)
    store.commit("t1", "r1", run.fence, run.state_version, [end], now)
    with pytest.raises(RunClosedError):
        store.plan_effect("t1", "r1", run.fence, intent(), clock.now())


def test_an_effect_moves_only_from_the_status_the_caller_saw(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    planned = store.plan_effect("t1", "r1", run.fence, intent(), clock.now())
    clock.advance(1)
    executing = store.update_effect(
        "t1",
        planned.key,
        expected_status=E.PLANNED,
        status=E.EXECUTING,
        fence=run.fence,
        now=clock.now(),
        attempts_delta=1,
    )
    assert (executing.status, executing.attempts) == (E.EXECUTING, 1)
    assert executing.updated_at > planned.updated_at
    with pytest.raises(EffectStateError):
        store.update_effect(
            "t1",
            planned.key,
            expected_status=E.PLANNED,
            status=E.EXECUTING,
            fence=run.fence,
            now=clock.now(),
        )
    confirmed = store.update_effect(
        "t1",
        planned.key,
        expected_status=E.EXECUTING,
        status=E.CONFIRMED,
        fence=run.fence,
        now=clock.now(),
        result={"z": 1, "a": [1, 2]},
        receipt="rcpt-1",
    )
    assert (confirmed.result, confirmed.receipt, confirmed.last_error) == (
        {"z": 1, "a": [1, 2]},
        "rcpt-1",
        None,
    )
    assert list(confirmed.result) == ["z", "a"], "JSON keeps its key order"
    with pytest.raises(EffectNotFoundError):
        store.update_effect(
            "t1",
            "no/such/key",
            expected_status=E.PLANNED,
            status=E.EXECUTING,
            fence=None,
            now=clock.now(),
        )


def test_a_person_resolves_an_effect_without_a_fence(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    planned = store.plan_effect("t1", "r1", run.fence, intent(), clock.now())
    store.update_effect(
        "t1",
        planned.key,
        expected_status=E.PLANNED,
        status=E.EXECUTING,
        fence=run.fence,
        now=clock.now(),
        error={"kind": "timeout"},
    )
    store.update_effect(
        "t1",
        planned.key,
        expected_status=E.EXECUTING,
        status=E.AMBIGUOUS,
        fence=run.fence,
        now=clock.now(),
    )
    resolved = store.update_effect(
        "t1",
        planned.key,
        expected_status=E.AMBIGUOUS,
        status=E.CONFIRMED,
        fence=None,
        now=clock.now(),
        resolution={"by": "ops", "note": "seen in the ledger"},
    )
    assert resolved.status is E.CONFIRMED
    assert resolved.last_error == {"kind": "timeout"}, "None keeps the old value"
    assert resolved.resolution == {"by": "ops", "note": "seen in the ledger"}
    last = store.events("t1", "r1")[-1]
    assert (last.type, last.data["to"], last.data["resolution"]["by"]) == (
        "effect",
        "confirmed",
        "ops",
    )


def test_effects_list_in_planning_order_and_filter_by_status(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    for name in ("b", "a", "c"):
        store.plan_effect("t1", "r1", run.fence, intent(name), clock.now())
    store.update_effect(
        "t1",
        intent("a").key,
        expected_status=E.PLANNED,
        status=E.EXECUTING,
        fence=run.fence,
        now=clock.now(),
    )
    assert [e.name for e in store.list_effects("t1", run_id="r1")] == ["b", "a", "c"]
    assert [e.name for e in store.list_effects("t1", statuses=[E.EXECUTING])] == ["a"]
    assert store.list_effects("t2") == []


def test_no_effect_is_planned_on_a_finished_run(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    now = clock.now()
    end = Boundary("first", StepOutcome.DONE, None, RunStatus.SUCCEEDED, now, now)
    store.commit("t1", "r1", run.fence, run.state_version, [end], now)
    with pytest.raises(RunClosedError):
        store.plan_effect("t1", "r1", run.fence, intent(), clock.now())


def test_a_worker_that_lost_its_run_learns_so_before_the_effect_status(
    store: Store, clock: FakeClock
) -> None:
    stale = claimed(store, clock)
    planned = store.plan_effect("t1", "r1", stale.fence, intent(), clock.now())
    clock.advance(31)  # the lease expires; another worker takes the run and confirms the effect
    fresh = claim(store, clock, owner="w2", tenant_id="t1", run_id="r1")
    assert fresh is not None and fresh.fence == stale.fence + 1
    for status in (E.EXECUTING, E.CONFIRMED):
        store.update_effect(
            "t1",
            planned.key,
            expected_status=E.PLANNED if status is E.EXECUTING else E.EXECUTING,
            status=status,
            fence=fresh.fence,
            now=clock.now(),
            attempts_delta=1 if status is E.EXECUTING else 0,
        )
    with pytest.raises(LeaseLostError):
        store.update_effect(
            "t1",
            planned.key,
            expected_status=E.PLANNED,
            status=E.EXECUTING,
            fence=stale.fence,
            now=clock.now(),
            attempts_delta=1,
        )


def run_intent(run_id: str, name: str = "charge") -> NewEffect:
    return NewEffect(
        f"t1/wf/{run_id}/1.first/{name}", "first", 1, name, "payments", "charge", "h", {}
    )


def three_running(store: Store, clock: FakeClock) -> dict[str, Run]:
    """Runs r1, r2 and r3 of tenant t1, claimed, each on a thread of its own (so all three run
    at once)."""
    runs: dict[str, Run] = {}
    for run_id in ("r1", "r2", "r3"):
        store.create_run(new_run(run_id, thread=run_id), clock.now())
        run = claim(store, clock, tenant_id="t1", run_id=run_id)
        assert run is not None
        runs[run_id] = run
    return runs


def test_a_group_of_moves_refuses_only_the_stale_one(store: Store, clock: FakeClock) -> None:
    runs = three_running(store, clock)
    planned = {
        run_id: store.plan_effect("t1", run_id, run.fence, run_intent(run_id), clock.now())
        for run_id, run in runs.items()
    }
    store.set_status(
        "t1",
        "r2",
        expected_status=RunStatus.RUNNING,
        expected_version=runs["r2"].state_version,
        status=RunStatus.CANCELLED,
        fence=None,
        now=clock.now(),
    )
    fence = {run_id: run.fence for run_id, run in runs.items()}
    moves = [  # answered in this order, written in (tenant, run) order
        EffectMove("t1", "r3", planned["r3"].key, E.PLANNED, E.EXECUTING, fence["r3"] + 1, 1),
        EffectMove("t1", "r1", planned["r1"].key, E.PLANNED, E.EXECUTING, fence["r1"], 1),
        EffectMove("t1", "r2", planned["r2"].key, E.PLANNED, E.EXECUTING, fence["r2"], 1),
        EffectMove("t1", "r0", "t1/wf/r0/1.first/nothing", E.PLANNED, E.EXECUTING, 1),
    ]
    answers = store.move_effects(moves, clock.now())
    assert isinstance(answers[0], LeaseLostError)
    assert isinstance(answers[1], EffectRecord) and answers[1].run_id == "r1"
    assert (answers[1].status, answers[1].attempts) == (E.EXECUTING, 1)
    assert isinstance(answers[2], RunClosedError)
    assert isinstance(answers[3], EffectNotFoundError)
    assert store.get_effect("t1", planned["r2"].key) == planned["r2"]
    assert store.get_effect("t1", planned["r3"].key) == planned["r3"]
    done = store.move_effects(
        [
            EffectMove(
                "t1", "r1", planned["r1"].key, E.EXECUTING, E.CONFIRMED, fence["r1"], 0, {"id": 7}
            )
        ],
        clock.now(),
    )
    assert isinstance(done[0], EffectRecord) and done[0].result == {"id": 7}
    moved = [e.data for e in store.events("t1", "r1") if e.type == "effect"]
    assert [(d["from"], d["to"]) for d in moved[1:]] == [
        ("planned", "executing"),
        ("executing", "confirmed"),
    ]
    assert [e.data["to"] for e in store.events("t1", "r3") if e.type == "effect"] == ["planned"]


def test_a_group_of_intents_refuses_only_the_stale_one(store: Store, clock: FakeClock) -> None:
    runs = three_running(store, clock)
    known = store.plan_effect("t1", "r1", runs["r1"].fence, run_intent("r1", "old"), clock.now())
    plans = [  # answered in this order, written in (tenant, run) order
        EffectPlan("t1", "r3", runs["r3"].fence, run_intent("r3")),
        EffectPlan("t1", "r1", runs["r1"].fence, run_intent("r1")),
        EffectPlan("t1", "r2", runs["r2"].fence + 1, run_intent("r2")),
        EffectPlan("t1", "r1", runs["r1"].fence, run_intent("r1", "old")),
    ]
    answers = store.plan_effects(plans, clock.now())
    assert isinstance(answers[0], EffectRecord) and answers[0].run_id == "r3"
    assert isinstance(answers[1], EffectRecord) and answers[1].status is E.PLANNED
    assert isinstance(answers[2], LeaseLostError)
    assert answers[3] == known, "a key recorded already: its record, nothing written"
    assert store.get_effect("t1", run_intent("r2").key) is None
    planned = [e.data["key"] for e in store.events("t1", "r1") if e.type == "effect"]
    assert planned == [run_intent("r1", "old").key, run_intent("r1").key]
    assert [e.type for e in store.events("t1", "r2") if e.type == "effect"] == []


def test_an_intent_recorded_executing_is_the_first_attempt_with_both_events(
    store: Store, clock: FakeClock
) -> None:
    runs = three_running(store, clock)
    deadline = clock.now() + timedelta(seconds=30)
    alone = store.plan_effects(
        [EffectPlan("t1", "r1", runs["r1"].fence, run_intent("r1"), True, deadline)], clock.now()
    )
    grouped = store.plan_effects(
        [
            EffectPlan("t1", "r2", runs["r2"].fence, run_intent("r2"), True, deadline),
            EffectPlan("t1", "r3", runs["r3"].fence, run_intent("r3")),
        ],
        clock.now(),
    )
    for answer, run_id in zip([*alone, *grouped], ["r1", "r2", "r3"], strict=True):
        assert isinstance(answer, EffectRecord)
        assert answer == store.get_effect("t1", run_intent(run_id).key), (
            "what an intent answers is its record as read back"
        )
    executing, planned = alone[0], grouped[1]
    assert isinstance(executing, EffectRecord) and isinstance(planned, EffectRecord)
    assert (executing.status, executing.attempts, executing.deadline) == (
        E.EXECUTING,
        1,
        deadline,
    )
    assert (planned.status, planned.attempts, planned.deadline) == (E.PLANNED, 0, None)
    moves = [
        (e.data.get("from"), e.data["to"]) for e in store.events("t1", "r1") if e.type == "effect"
    ]
    assert moves == [(None, "planned"), ("planned", "executing")]
