"""Leases: claims, fences, expiry, heartbeats and releases."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from perdure.core.clock import FakeClock
from perdure.core.errors import (
    LeaseLostError,
)
from perdure.core.model import RunStatus
from perdure.store.base import Store
from perdure.testing.conformance.support import LEASE, boundary, claim, new_run


def test_a_claim_increments_the_fence_and_starts_the_run(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock)
    assert run is not None
    assert (run.status, run.fence, run.owner) == (RunStatus.RUNNING, 1, "w1")
    assert claim(store, clock, "w2") is None, "a live lease cannot be claimed"
    events = [e.type for e in store.events("t1", "r1")]
    assert events == ["created", "claimed", "status"]


def test_a_claim_records_who_took_the_run_from_whom_and_the_status_change(
    store: Store, clock: FakeClock
) -> None:
    """The worker's scan (one statement on PostgreSQL) and a named claim record the same
    events, in this order: who claimed the run and from whom, then its status change if any."""
    for run_id in ("r1", "r2"):
        store.create_run(new_run(run_id, thread=f"th-{run_id}"), clock.now())
        clock.advance(1)
    assert claim(store, clock) is not None  # the scan takes the oldest, r1
    assert claim(store, clock, tenant_id="t1", run_id="r2") is not None
    clock.advance(31)
    taken = claim(store, clock, "w2")
    assert taken is not None and (taken.run_id, taken.previous_owner) == ("r1", "w1")
    first = [
        ("claimed", {"owner": "w1", "previous_owner": None}),
        ("status", {"from": "PENDING", "to": "RUNNING"}),
    ]
    for run_id, expected in (
        ("r1", [*first, ("claimed", {"owner": "w2", "previous_owner": "w1"})]),
        ("r2", first),
    ):
        got = [(e.type, e.data) for e in store.events("t1", run_id) if e.type != "created"]
        assert got == expected, run_id


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


def test_claims_only_the_workflows_asked_for(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1", workflow="other"), clock.now())
    assert claim(store, clock) is None
    assert store.claim("w1", clock.now() + LEASE, clock.now(), ["other"]) is not None


def test_two_claimers_racing_never_both_win(store: Store, clock: FakeClock) -> None:
    for i in range(20):
        store.create_run(new_run(f"r{i}", thread=f"th{i}"), clock.now())
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


def test_many_leases_are_renewed_in_one_call_and_lost_ones_reported(
    store: Store, clock: FakeClock
) -> None:
    held = []
    for run_id in ("r1", "r2", "r3"):
        store.create_run(new_run(run_id, thread=run_id), clock.now())
        run = claim(store, clock, tenant_id="t1", run_id=run_id)
        assert run is not None
        held.append(("t1", run_id, run.fence))
    clock.advance(31)  # every lease expired; another worker takes r2
    assert claim(store, clock, "w2", tenant_id="t1", run_id="r2") is not None
    lost = store.renew_leases("w1", held, clock.now() + LEASE)
    assert lost == [("t1", "r2", 1)]
    clock.advance(20)
    assert claim(store, clock, "w3") is None, "r1 and r3 were renewed"
    assert store.renew_leases("w1", [], clock.now() + LEASE) == []


def test_release_makes_the_run_claimable_at_once(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock)
    assert run is not None
    assert store.release("t1", "r1", "w1", run.fence, clock.now())
    assert not store.release("t1", "r1", "w1", run.fence, clock.now()), "second release is a no-op"
    again = claim(store, clock, "w2")
    assert again is not None and again.status is RunStatus.RUNNING


@pytest.mark.parametrize("named", [False, True], ids=["scan", "by run id"])
def test_a_takeover_counts_an_attempt_of_the_step_in_progress(
    store: Store, clock: FakeClock, named: bool
) -> None:
    store.create_run(new_run("r1"), clock.now())
    ask = {"tenant_id": "t1", "run_id": "r1"} if named else {}
    first = claim(store, clock, "w1", **ask)
    assert first is not None and (first.attempt, first.takeover_step) == (1, None)
    clock.advance(31)
    second = claim(store, clock, "w2", **ask)  # w1 died holding the lease: a takeover
    assert second is not None and (second.step_takeovers, second.takeover_step) == (1, 0)
    assert second.attempt == 2 and second.interrupted_attempts == 1
    clock.advance(31)
    third = claim(store, clock, "w3", **ask)
    assert third is not None and third.attempt == 3
    store.commit("t1", "r1", third.fence, third.state_version, [boundary(clock)], clock.now())
    moved = store.get_run("t1", "r1")
    assert moved.attempt == 1, "the count belongs to the step that committed"
    assert store.release("t1", "r1", "w3", third.fence, clock.now())
    fourth = claim(store, clock, "w4", **ask)  # released, not taken over
    assert fourth is not None and fourth.attempt == 1
    clock.advance(31)
    fifth = claim(store, clock, "w5", **ask)
    assert fifth is not None and (fifth.attempt, fifth.takeover_step) == (2, 1)
