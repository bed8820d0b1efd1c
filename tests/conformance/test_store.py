"""Store behaviours every backend must have (see perdure.store.base.Store)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from perdure import FakeClock
from perdure.core.errors import (
    LeaseLostError,
    RunClosedError,
    RunNotFoundError,
    StaleStateError,
)
from perdure.core.model import Message, RunStatus, ToolCall
from perdure.store.base import Boundary, Store
from tests.conformance.conftest import LEASE, new_run


def boundary(
    clock: FakeClock,
    step: str = "first",
    next_step: str | None = "second",
    status: RunStatus = RunStatus.RUNNING,
    **kw: object,
) -> Boundary:
    now = clock.now()
    outcome = "next" if status is RunStatus.RUNNING else "done"
    return Boundary(step, outcome, next_step, status, now, now, **kw)  # type: ignore[arg-type]


def claim(store: Store, clock: FakeClock, owner: str = "w1", **kw: object):  # type: ignore[no-untyped-def]
    return store.claim(owner, clock.now() + LEASE, clock.now(), ["wf"], **kw)  # type: ignore[arg-type]


def test_a_new_run_is_pending_with_its_release_manifest(store: Store, clock: FakeClock) -> None:
    run, created = store.create_run(new_run("r1"), clock.now())
    assert created
    assert run.status is RunStatus.PENDING
    assert run.next_step == "first"
    assert run.release.code == "abc"
    assert store.load_state("t1", "r1") == {"n": b"0"}


def test_the_same_idempotency_key_gives_one_run(store: Store, clock: FakeClock) -> None:
    first, created1 = store.create_run(new_run("r1", key="k"), clock.now())
    again, created2 = store.create_run(new_run("r2", key="k"), clock.now())
    assert (created1, created2) == (True, False)
    assert again.run_id == first.run_id
    assert [r.run_id for r in store.list_runs("t1")] == ["r1"]


def test_idempotency_keys_are_per_tenant(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1", key="k"), clock.now())
    _, created = store.create_run(new_run("r2", key="k", tenant="t2"), clock.now())
    assert created


def test_another_tenants_run_is_not_found(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    with pytest.raises(RunNotFoundError):
        store.get_run("t2", "r1")
    assert store.list_runs("t2") == []
    assert store.load_state("t2", "r1") == {}


def test_a_claim_increments_the_fence_and_starts_the_run(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock)
    assert run is not None
    assert (run.status, run.fence, run.owner) == (RunStatus.RUNNING, 1, "w1")
    assert claim(store, clock, "w2") is None, "a live lease cannot be claimed"
    events = [e.type for e in store.events("t1", "r1")]
    assert events == ["created", "claimed", "status"]


def test_an_expired_lease_lets_a_second_worker_claim(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    first = claim(store, clock, "w1")
    clock.advance(31)
    second = claim(store, clock, "w2")
    assert first is not None and second is not None
    assert second.fence == first.fence + 1
    assert second.owner == "w2"


def test_a_dead_owner_can_be_taken_over_before_expiry(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    claim(store, clock, "w1")
    assert claim(store, clock, "w2", dead_owner="someone-else") is None
    taken = claim(store, clock, "w2", dead_owner="w1")
    assert taken is not None and taken.fence == 2


def test_a_stale_owner_cannot_commit_and_changes_nothing(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    old = claim(store, clock, "w1")
    clock.advance(31)
    new = claim(store, clock, "w2")
    assert old is not None and new is not None
    with pytest.raises(LeaseLostError):
        store.commit(
            "t1",
            "r1",
            old.fence,
            old.state_version,
            [boundary(clock, state={"n": b"9"})],
            clock.now(),
        )
    after = store.get_run("t1", "r1")
    assert after.state_version == new.state_version
    assert after.next_step == "first"
    assert store.load_state("t1", "r1") == {"n": b"0"}
    assert store.steps("t1", "r1") == []


def test_a_commit_with_a_stale_version_is_refused(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock)
    assert run is not None
    with pytest.raises(StaleStateError):
        store.commit("t1", "r1", run.fence, run.state_version - 1, [boundary(clock)], clock.now())


def test_a_commit_writes_steps_state_messages_and_events_at_once(
    store: Store, clock: FakeClock
) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock)
    assert run is not None
    call = ToolCall("call-1", "lookup", {"q": 1})
    b1 = boundary(
        clock,
        state={"n": b"1"},
        messages=(Message("assistant", "", (call,)), Message("tool", "42", tool_call_id="call-1")),
    )
    b2 = boundary(clock, "second", None, RunStatus.SUCCEEDED, state={"m": b"2"}, result={"ok": 1})
    version = store.commit("t1", "r1", run.fence, run.state_version, [b1, b2], clock.now())
    after = store.get_run("t1", "r1")
    assert after.state_version == version == run.state_version + 1
    assert (after.status, after.next_step, after.result, after.steps_done) == (
        RunStatus.SUCCEEDED,
        None,
        {"ok": 1},
        2,
    )
    assert after.owner is None, "ending a run releases its lease"
    assert [s.name for s in store.steps("t1", "r1")] == ["first", "second"]
    assert store.load_state("t1", "r1") == {"n": b"1", "m": b"2"}
    msgs = store.messages("t1", "th1")
    assert [m.seq for m in msgs] == [1, 2]
    assert msgs[0].tool_calls == (call,)
    assert msgs[1].tool_call_id == "call-1"
    types = [e.type for e in store.events("t1", "r1")]
    assert types[-3:] == ["step_completed", "step_completed", "status"]


def test_a_finished_run_refuses_every_write(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock)
    assert run is not None
    done = boundary(clock, status=RunStatus.SUCCEEDED, next_step=None)
    version = store.commit("t1", "r1", run.fence, run.state_version, [done], clock.now())
    with pytest.raises(RunClosedError):
        store.commit("t1", "r1", run.fence, version, [boundary(clock)], clock.now())
    assert claim(store, clock) is None
    with pytest.raises(RunClosedError):
        store.set_status(
            "t1",
            "r1",
            expected_status=RunStatus.SUCCEEDED,
            expected_version=version,
            status=RunStatus.FAILED,
            fence=None,
            now=clock.now(),
        )


def test_heartbeat_extends_the_lease_and_fails_once_lost(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock)
    assert run is not None
    clock.advance(20)
    store.heartbeat("t1", "r1", "w1", run.fence, clock.now() + LEASE)
    clock.advance(20)
    assert claim(store, clock, "w2") is None, "the renewed lease is still live"
    clock.advance(31)
    assert claim(store, clock, "w2") is not None
    with pytest.raises(LeaseLostError):
        store.heartbeat("t1", "r1", "w1", run.fence, clock.now() + LEASE)


def test_release_makes_the_run_claimable_at_once(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock)
    assert run is not None
    assert store.release("t1", "r1", "w1", run.fence, clock.now())
    assert not store.release("t1", "r1", "w1", run.fence, clock.now()), "second release is a no-op"
    again = claim(store, clock, "w2")
    assert again is not None and again.status is RunStatus.RUNNING


def test_set_status_is_guarded_and_records_the_change(store: Store, clock: FakeClock) -> None:
    created, _ = store.create_run(new_run("r1"), clock.now())
    run = store.set_status(
        "t1",
        "r1",
        expected_status=RunStatus.PENDING,
        expected_version=created.state_version,
        status=RunStatus.CANCEL_REQUESTED,
        fence=None,
        now=clock.now(),
        data={"reason": "user"},
    )
    assert run.status is RunStatus.CANCEL_REQUESTED
    with pytest.raises(StaleStateError):
        store.set_status(
            "t1",
            "r1",
            expected_status=RunStatus.PENDING,
            expected_version=created.state_version,
            status=RunStatus.CANCEL_REQUESTED,
            fence=None,
            now=clock.now(),
        )
    last = store.events("t1", "r1")[-1]
    assert (last.type, last.data["from"], last.data["to"]) == (
        "status",
        "PENDING",
        "CANCEL_REQUESTED",
    )


def test_claims_only_the_workflows_asked_for(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1", workflow="other"), clock.now())
    assert claim(store, clock) is None
    assert store.claim("w1", clock.now() + LEASE, clock.now(), ["other"]) is not None


def test_list_runs_filters_by_status_workflow_and_thread(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1", thread="a"), clock.now())
    clock.advance(1)
    store.create_run(new_run("r2", thread="b", workflow="other"), clock.now())
    assert [r.run_id for r in store.list_runs("t1")] == ["r2", "r1"]
    assert [r.run_id for r in store.list_runs("t1", thread_id="a")] == ["r1"]
    assert [r.run_id for r in store.list_runs("t1", workflow="other")] == ["r2"]
    assert store.list_runs("t1", statuses=[RunStatus.RUNNING]) == []
    assert len(store.list_runs("t1", statuses=[RunStatus.PENDING, RunStatus.RUNNING])) == 2


def test_message_seq_continues_across_runs_of_a_thread(store: Store, clock: FakeClock) -> None:
    for rid in ("r1", "r2"):
        store.create_run(new_run(rid), clock.now())
        run = store.claim("w", clock.now() + LEASE, clock.now(), ["wf"], tenant_id="t1", run_id=rid)
        assert run is not None
        b = boundary(clock, messages=(Message("user", rid),))
        store.commit("t1", rid, run.fence, run.state_version, [b], clock.now())
    assert [(m.seq, m.content) for m in store.messages("t1", "th1")] == [(1, "r1"), (2, "r2")]


def test_two_claimers_racing_never_both_win(store: Store, clock: FakeClock) -> None:
    for i in range(20):
        store.create_run(new_run(f"r{i}"), clock.now())
    won: list[str] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        while True:
            run = claim(store, clock, name)
            if run is None:
                return
            with lock:
                won.append(run.run_id)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won) == sorted(f"r{i}" for i in range(20))


def test_lease_expiry_is_decided_by_the_time_passed_in(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    claim(store, clock)
    later = clock.now() + timedelta(seconds=29)
    assert store.claim("w2", later + LEASE, later, ["wf"]) is None
    later = clock.now() + timedelta(seconds=31)
    assert store.claim("w2", later + LEASE, later, ["wf"]) is not None


def test_the_latest_events_come_oldest_first(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    for _ in range(3):
        clock.advance(31)
        claim(store, clock, "w")
    every = store.events("t1", "r1")
    latest = store.events("t1", "r1", limit=2, latest=True)
    assert [e.seq for e in latest] == [e.seq for e in every[-2:]]
    assert [e.seq for e in store.events("t1", "r1", after=every[0].seq, limit=1)] == [every[1].seq]
