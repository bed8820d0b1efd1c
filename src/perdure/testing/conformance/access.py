"""API keys, event feeds and operator counts, on every backend."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta

import pytest

from perdure.core.budget import Budget
from perdure.core.clock import FakeClock
from perdure.core.errors import KeyNameTakenError, KeyNotFoundError
from perdure.core.keys import matches, new_key, parse_token
from perdure.core.model import RunStatus
from perdure.core.observed import PeriodCount, RunCount, SpendCount
from perdure.store.base import Store
from perdure.testing.conformance.support import LEASE, boundary, claimed, needs, new_run


@pytest.fixture(autouse=True)
def needs_access_activity_wings(store: Store) -> None:
    """Every test here needs the access and activity wings: skipped on a store without."""
    needs(store, "access", "activity")


def test_a_key_is_stored_hashed_found_by_id_and_revoked_once(
    store: Store, clock: FakeClock
) -> None:
    made = new_key("t1", "ops", frozenset({"admin", "approver"}), clock.now())
    store.access.create_key(made.key, made.secret_hash, clock.now())
    key_id, secret = parse_token(made.token)
    found = store.access.find_key(key_id)
    assert found is not None
    key, stored_hash = found
    assert key == made.key and stored_hash != secret and matches(secret, stored_hash)
    assert key.principal.roles == {"admin", "approver"} and key.principal.subject == "ops"
    with pytest.raises(KeyNameTakenError):
        store.access.create_key(
            new_key("t1", "ops", frozenset(), clock.now()).key, "h", clock.now()
        )
    with pytest.raises(KeyNotFoundError):
        store.access.revoke_key("t2", key_id, clock.now())
    first = store.access.revoke_key("t1", key_id, clock.now())
    clock.advance(5)
    again = store.access.revoke_key("t1", key_id, clock.now())
    assert first.revoked_at is not None and again.revoked_at == first.revoked_at
    assert store.access.list_keys("t1") == [] and store.access.list_keys("t1", revoked=True) == [
        again
    ]
    reused = new_key("t1", "ops", frozenset(), clock.now())
    store.access.create_key(reused.key, reused.secret_hash, clock.now())
    assert [k.key_id for k in store.access.list_keys("t1")] == [reused.key.key_id]
    assert store.access.find_key("0" * 16) is None


def test_the_tenant_feed_holds_every_run_of_one_tenant_in_order(
    store: Store, clock: FakeClock
) -> None:
    store.create_run(new_run("a1"), clock.now())
    store.create_run(new_run("b1", tenant="t2", thread="tb"), clock.now())
    store.create_run(new_run("a2", workflow="other", thread="th2"), clock.now())
    claimed_run = store.claim("w", clock.now() + LEASE, clock.now(), ["wf"], tenant_id="t1")
    assert claimed_run is not None and claimed_run.run_id == "a1"
    feed = store.activity.tenant_events("t1")
    assert [e.run_id for e in feed] == ["a1", "a2", "a1", "a1"]
    assert [e.seq for e in feed] == sorted(e.seq for e in feed)
    assert [e.type for e in store.activity.tenant_events("t1", types=["claimed"])] == ["claimed"]
    assert {e.run_id for e in store.activity.tenant_events("t1", workflow="other")} == {"a2"}
    later = store.activity.tenant_events("t1", after=feed[1].seq)
    assert later == feed[2:]
    everyone = store.activity.events_since(0)
    assert {(t, r) for _, t, r in everyone} == {("t1", "a1"), ("t1", "a2"), ("t2", "b1")}
    assert store.activity.last_event_seq() == everyone[-1][0]
    assert store.activity.events_since(store.activity.last_event_seq()) == []


def test_counts_and_the_queue_show_what_operators_watch(store: Store, clock: FakeClock) -> None:
    assert store.activity.run_counts() == [] and store.activity.queue(clock.now()).depth == 0
    store.create_run(new_run("p1", thread="x1"), clock.now())
    clock.advance(10)
    store.create_run(new_run("p2", thread="x2"), clock.now())
    store.create_run(new_run("q1", tenant="t2", thread="x3"), clock.now())
    run = claimed(store, clock, "r1")
    store.set_status(
        "t1",
        "r1",
        expected_status=RunStatus.RUNNING,
        expected_version=run.state_version,
        status=RunStatus.QUARANTINED,
        fence=run.fence,
        now=clock.now(),
        data={"reason": "tampered"},
    )
    counts = store.activity.run_counts()
    assert RunCount("t1", "wf", RunStatus.PENDING, 2) in counts
    assert RunCount("t1", "wf", RunStatus.QUARANTINED, 1) in counts
    assert RunCount("t2", "wf", RunStatus.PENDING, 1) in counts
    assert all(c.tenant_id == "t2" for c in store.activity.run_counts("t2"))
    queue = store.activity.queue(clock.now() + timedelta(seconds=1))
    assert queue.depth == 3 and queue.oldest is not None
    assert queue.oldest <= clock.now() - timedelta(seconds=10)
    assert store.activity.effect_counts() == []


def test_a_store_without_notifications_says_so_at_once(store: Store) -> None:
    woken = store.activity.wait_for_events(0.01)
    assert woken is None if not store.notifies else woken == []


def test_stuck_runs_can_be_read_for_one_tenant(store: Store, clock: FakeClock) -> None:
    claimed(store, clock, "r1")
    store.create_run(new_run("r2", tenant="t2", thread="x"), clock.now())
    other = store.claim("w", clock.now() + LEASE, clock.now(), ["wf"], tenant_id="t2")
    assert other is not None
    clock.advance(600)
    before = clock.now() - timedelta(seconds=300)
    assert {r.run_id for r in store.stuck_runs(before)} == {"r1", "r2"}
    assert [r.run_id for r in store.stuck_runs(before, tenant_id="t2")] == ["r2"]
    assert store.stuck_runs(before, tenant_id="t3") == []


def test_spend_counts_sum_what_the_budgets_recorded(store: Store, clock: FakeClock) -> None:
    used = Budget(tokens=1000).start().charged(tokens=120, cost=0.25)
    for run_id in ("s1", "s2"):
        store.create_run(replace(new_run(run_id, thread=run_id), budget=used), clock.now())
    store.create_run(new_run("s3", thread="s3"), clock.now())  # no budget: nothing recorded
    store.create_run(replace(new_run("s4", tenant="t2", thread="s4"), budget=used), clock.now())
    assert store.activity.spend_counts() == [
        SpendCount("t1", "wf", 240, 0.5),
        SpendCount("t2", "wf", 120, 0.25),
    ]
    assert store.activity.spend_counts("t2") == [SpendCount("t2", "wf", 120, 0.25)]


def test_a_feed_read_while_many_runs_commit_never_skips_an_event(
    store: Store, clock: FakeClock
) -> None:
    """Runs commit events at the same instant while a reader follows the tenant feed (and the
    store-wide one) by its cursor: the reader ends up with every event of the table, none
    skipped. (On PostgreSQL an event's number is taken before its transaction commits, so a
    lower number can become visible after a higher one; the feed waits for such writers.)"""
    runs = [f"race{i}" for i in range(8)]
    for r in runs:
        store.create_run(new_run(r, thread=f"th-{r}"), clock.now())
    done = threading.Event()

    def write(run_id: str) -> None:
        for n in range(60):
            store.record_event("t1", run_id, "late_signal", {"n": n}, clock.now())

    seen: list[int] = []
    seen_all: list[int] = []

    def follow() -> None:
        after = after_all = 0
        while True:
            last_round = done.is_set()
            batch = store.activity.tenant_events("t1", after=after, limit=50)
            seen.extend(e.seq for e in batch)
            after = batch[-1].seq if batch else after
            every = store.activity.events_since(after_all, limit=50)
            seen_all.extend(seq for seq, _, _ in every)
            after_all = every[-1][0] if every else after_all
            if last_round and not batch and not every:
                return

    reader = threading.Thread(target=follow)
    reader.start()
    writers = [threading.Thread(target=write, args=(r,)) for r in runs]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    done.set()
    reader.join(timeout=120)
    table = [e.seq for e in store.activity.tenant_events("t1", limit=100_000)]
    assert len(table) >= 8 * 60
    assert seen == table, f"{len(set(table) - set(seen))} events skipped by the tenant feed"
    assert sorted(set(seen_all)) == sorted(set(table)), "the store-wide feed skipped events"


def test_runs_by_period_and_step_timings_feed_the_overview(store: Store, clock: FakeClock) -> None:
    start = clock.now()
    store.create_run(new_run("p1", thread="x1"), clock.now())
    clock.advance(3600)
    run = claimed(store, clock, "r1")
    b1 = replace(boundary(clock), started_at=clock.now() - timedelta(seconds=2))
    b2 = boundary(clock, "second", None, RunStatus.SUCCEEDED)
    store.commit("t1", "r1", run.fence, run.state_version, [b1, b2], clock.now())
    store.create_run(new_run("q1", tenant="t2", thread="x3"), clock.now())
    hourly = store.activity.runs_by_period("t1", start, daily=False)
    first, second = start.strftime("%Y-%m-%dT%H"), clock.now().strftime("%Y-%m-%dT%H")
    assert hourly == [
        PeriodCount(first, RunStatus.PENDING, 1),
        PeriodCount(second, RunStatus.SUCCEEDED, 1),
    ]
    daily = store.activity.runs_by_period("t1", start, daily=True)
    assert {p.period for p in daily} <= {
        start.strftime("%Y-%m-%d"),
        clock.now().strftime("%Y-%m-%d"),
    }
    assert sum(p.count for p in daily) == 2
    assert (
        store.activity.runs_by_period("t1", clock.now() + timedelta(seconds=1), daily=False) == []
    )
    timings = store.activity.step_timings("t1", start, limit=10)
    assert [(t.workflow, t.step, t.seconds) for t in timings] == [
        ("wf", "first", 2.0),
        ("wf", "second", 0.0),
    ]
    assert len(store.activity.step_timings("t1", start, limit=1)) == 1
    assert store.activity.step_timings("t2", start, limit=10) == []
